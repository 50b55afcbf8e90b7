/**
 * The PostgreSQL stores wired as an instance wires them (database pool, registered instance,
 * ledger store, limiter), on a fresh database of the shared test server — for store-level tests.
 * `instance()` adds another instance on the same database, to test what they share.
 */
import { afterAll, beforeAll, setDefaultTimeout } from "bun:test";
import { randomBytes } from "node:crypto";
import { PgDatabase } from "../../src/store/postgres/database";
import { migratePostgres } from "../../src/store/postgres/migrate";
import { InstanceRegistry, type RegistryOptions } from "../../src/store/postgres/instances";
import { PostgresLedgerStore, type PostgresLedgerOptions } from "../../src/store/postgres/ledger-store";
import { PostgresLimiter } from "../../src/store/postgres/limiter";
import { testDatabase } from "./postgres";
import { ChargeJournal } from "../../src/store/postgres/charge-journal";
import { listenForRecalls } from "../../src/store/postgres/changes";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PgInstance {
  db: PgDatabase;
  registry: InstanceRegistry;
  ledger: PostgresLedgerStore;
  limiter: PostgresLimiter;
  close(): Promise<void>;
}

export interface PgFixture {
  url: string;
  /** The first instance. */
  a: PgInstance;
  /**
   * Another instance on the same database (registered, not started). `leases`: with a charge
   * journal in a temporary directory, as a serving instance has, so its holds come from leases.
   */
  instance(opts?: Partial<RegistryOptions> & { ledger?: Partial<PostgresLedgerOptions>; pool?: number; leases?: boolean; journalDir?: string; shipMs?: number }): Promise<PgInstance>;
  /** A new account with `credits` nano-USD, written through the ledger (one credit entry). */
  account(credits?: number): Promise<string>;
  /** The account's columns as numbers. */
  balances(accountId: string): Promise<{ balance: number; reserved: number }>;
  /** Σ ledger entry amounts of the account. */
  ledgerSum(accountId: string): Promise<number>;
  close(): Promise<void>;
}

export async function pgFixture(url?: string): Promise<PgFixture> {
  const dbUrl = url ?? (await testDatabase());
  const admin = new PgDatabase({ url: dbUrl, pool: 2 });
  await migratePostgres(admin.sql);
  const instances: PgInstance[] = [];
  const instance: PgFixture["instance"] = async (opts = {}) => {
    const db = new PgDatabase({ url: dbUrl, pool: opts.pool ?? 4 });
    const registry = new InstanceRegistry(db, { name: opts.name ?? `test-${randomBytes(3).toString("hex")}`, timeoutMs: opts.timeoutMs ?? 15_000, ...opts });
    await registry.register();
    const journalDir = opts.journalDir ?? (opts.leases ? mkdtempSync(join(tmpdir(), "switchyard-journal-")) : null);
    const ledger = new PostgresLedgerStore(db, registry, {
      ...(journalDir ? { journal: (ship, shipped) => new ChargeJournal(journalDir, { ship, shipped, shipMs: opts.shipMs ?? 5 }) } : {}),
      ...opts.ledger,
    });
    const limiter = new PostgresLimiter(db, registry);
    // A serving instance hears recalls (open.ts): another instance asks for what it leases.
    const recalls = journalDir ? await listenForRecalls(db, (subject) => {
      void ledger.recalled(subject);
      void limiter.recalled(subject);
    }) : null;
    const inst: PgInstance = {
      db, registry, ledger, limiter,
      async close() {
        await recalls?.close().catch(() => {});
        registry.halt();
        await ledger.flush().catch(() => {});
        await limiter.flush().catch(() => {});
        ledger.closeJournal();
        await db.close().catch(() => {});
      },
    };
    instances.push(inst);
    return inst;
  };
  const a = await instance();
  let n = 0;
  return {
    url: dbUrl,
    a,
    instance,
    async account(credits = 0) {
      const id = `acct_t${++n}_${randomBytes(4).toString("hex")}`;
      await admin.sql`INSERT INTO accounts (id, name, created_at) VALUES (${id}, 'test', 0)`;
      if (credits > 0) await a.ledger.adjust(id, credits, "test credits");
      return id;
    },
    async balances(accountId) {
      const [r] = (await admin.sql`SELECT balance, reserved FROM accounts WHERE id = ${accountId}`) as { balance: string; reserved: string }[];
      return { balance: Number(r!.balance), reserved: Number(r!.reserved) };
    },
    async ledgerSum(accountId) {
      const [r] = (await admin.sql`SELECT COALESCE(SUM(amount), 0)::text AS s FROM ledger_entries WHERE account_id = ${accountId}`) as { s: string }[];
      return Number(r!.s);
    },
    async close() {
      for (const i of instances) await i.close();
      await admin.close();
    },
  };
}

/**
 * A test file's fixture: created before its tests and closed after them, with the generous
 * per-test timeout real servers on a shared machine need (also when the file runs alone, without
 * npm test's --timeout). The object forwards to the fixture once it exists.
 */
export function usePgFixture(): PgFixture {
  setDefaultTimeout(30_000);
  let fixture: PgFixture | null = null;
  beforeAll(async () => {
    fixture = await pgFixture();
  }, 60_000);
  afterAll(async () => {
    await fixture?.close();
  });
  return new Proxy({} as PgFixture, {
    get(_target, name) {
      if (!fixture) throw new Error("the PostgreSQL fixture is used before beforeAll created it");
      const value = (fixture as unknown as Record<string | symbol, unknown>)[name];
      return typeof value === "function" ? value.bind(fixture) : value;
    },
  });
}
