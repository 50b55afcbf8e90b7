/**
 * Starts a real Switchyard server on a free port with its own temporary data directory, on the
 * SQLite store (the default) or on PostgreSQL (a fresh database of the shared test server), plus
 * helpers to create accounts and keys through the admin API and to read what the store holds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { startServer, type RunningServer } from "../../src/server";
import type { ServiceOverrides } from "../../src/services";
import type { Database } from "bun:sqlite";
import type { SqliteDataStore } from "../../src/store/sqlite/open";
import type { TestStore } from "./stores";
import { liveProbe, pgProbe, sqliteProbe, type StoreProbe } from "./store-probe";
import { testDatabase } from "./postgres";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface Harness {
  server: RunningServer;
  base: string;
  dataDir: string;
  store: TestStore;
  /** The SQLite connection (SQLite harnesses only; use `probe` in tests that run on both stores). */
  readonly db: Database;
  /** Reads the store directly, on either engine. */
  probe: StoreProbe;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Creates an account with `credits` USD and returns it with a fresh key. */
  account(credits?: number | string, name?: string): Promise<{ id: string; key: string }>;
  /** SQLite harnesses only (synchronous); `probe.balance` works on both. */
  balanceUnits(accountId: string): { balance: number; reserved: number };
  /** SQLite harnesses only (synchronous); `probe.ledgerSum` works on both. */
  ledgerSum(accountId: string): number;
  stop(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}, overrides: ServiceOverrides = {}, store: TestStore = "sqlite"): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchyard-test-"));
  // PostgreSQL: a fresh database of the shared test server, unless the test names its own.
  const databaseUrl = store === "postgres" ? (env.SWITCHYARD_DATABASE_URL ?? (await testDatabase())) : null;
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    SWITCHYARD_DATA_DIR: dataDir,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    SWITCHYARD_LOG_LEVEL: "silent",
    SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
    // Upstream model lists are not read (every route served), so a scripted upstream sees only the
    // requests a test makes; tests of the lists set a refresh interval (test/own-model.test.ts).
    SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "0",
    ...(databaseUrl ? { SWITCHYARD_DATABASE_URL: databaseUrl } : {}),
    ...env,
  });
  // A failed fsync stops the process in production; here the process is the test runner, so a
  // test that injects one sees the store refuse writes instead (test/store-fsync.test.ts checks the stop).
  const server = await startServer(config, { stopAfterStoreFailure: () => {}, ...overrides });
  const sqlite = (): Database => {
    if (server.services.store.engine !== "sqlite") throw new Error("this harness runs on PostgreSQL: read the store through h.probe");
    return (server.services.store as SqliteDataStore).db;
  };
  const journal = (server.services.store as { ledger?: { journal?: { drain(ms: number): Promise<boolean> } | null } }).ledger?.journal;
  const probe = liveProbe(databaseUrl ? pgProbe(databaseUrl) : sqliteProbe(sqlite), server.services.ledger, journal ? () => journal.drain(10_000) : undefined);
  const base = server.url;
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() };
  };
  return {
    server,
    base,
    dataDir,
    store,
    get db() {
      return sqlite();
    },
    probe,
    admin,
    async account(credits = 10, name = "test") {
      const a = await admin("POST", "/admin/accounts", { name, credits });
      if (a.status !== 201) throw new Error(`account create failed: ${JSON.stringify(a.body)}`);
      const k = await admin("POST", `/admin/accounts/${a.body.id}/keys`, { name: "k" });
      return { id: a.body.id, key: k.body.key };
    },
    balanceUnits(accountId) {
      const row = sqlite().query("SELECT balance, reserved FROM accounts WHERE id = ?").get(accountId) as { balance: number; reserved: number };
      // Holds live in the server's memory: reserved is what it holds now.
      return { balance: row.balance, reserved: row.reserved + server.services.ledger.held(accountId) };
    },
    ledgerSum(accountId) {
      return (sqlite().query("SELECT COALESCE(SUM(amount),0) AS s FROM ledger_entries WHERE account_id = ?").get(accountId) as { s: number }).s;
    },
    async stop() {
      await server.stop();
      await probe.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
