/**
 * Starts a real Switchyard server on a free port with its own temporary data directory,
 * plus helpers to create accounts and keys through the admin API.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { startServer, type RunningServer } from "../../src/server";
import type { ServiceOverrides } from "../../src/services";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface Harness {
  server: RunningServer;
  base: string;
  dataDir: string;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Creates an account with `credits` USD and returns it with a fresh key. */
  account(credits?: number | string, name?: string): Promise<{ id: string; key: string }>;
  balanceUnits(accountId: string): { balance: number; reserved: number };
  ledgerSum(accountId: string): number;
  stop(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}, overrides: ServiceOverrides = {}): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchyard-test-"));
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    SWITCHYARD_DATA_DIR: dataDir,
    SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN,
    SWITCHYARD_LOG_LEVEL: "silent",
    SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
    ...env,
  });
  const server = await startServer(config, overrides);
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
    admin,
    async account(credits = 10, name = "test") {
      const a = await admin("POST", "/admin/accounts", { name, credits });
      if (a.status !== 201) throw new Error(`account create failed: ${JSON.stringify(a.body)}`);
      const k = await admin("POST", `/admin/accounts/${a.body.id}/keys`, { name: "k" });
      return { id: a.body.id, key: k.body.key };
    },
    balanceUnits(accountId) {
      return server.services.db.query("SELECT balance, reserved FROM accounts WHERE id = ?").get(accountId) as { balance: number; reserved: number };
    },
    ledgerSum(accountId) {
      return (server.services.db.query("SELECT COALESCE(SUM(amount),0) AS s FROM ledger_entries WHERE account_id = ?").get(accountId) as { s: number }).s;
    },
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
