/**
 * The PostgreSQL engine for the randomized ledger checker: the real PostgresLedgerStore over a
 * fresh database of the shared test server, as one registered instance. Its faults are the
 * database's own:
 *   - lock: another connection holds an EXCLUSIVE lock on `accounts`; the store's lock wait is
 *     short here, so writes fail with lock_not_available (55P03) and retry as they would on a hot row;
 *   - diskFull: a trigger raises disk_full (53100) on every write of holds and ledger entries —
 *     the error a full disk gives, from inside the engine;
 *   - fsyncFails (no such seam on a server): the store's connections are terminated by the
 *     server (pg_terminate_backend) — answers are lost and writes may or may not have committed;
 *   - crash: the process dies — heartbeats stop, the pool is dropped unflushed — and a new run of
 *     the same instance (same name) opens the store and releases what the dead run left.
 */
import { SQL } from "bun";
import { randomBytes } from "node:crypto";
import { PgDatabase } from "../../../src/store/postgres/database";
import { migratePostgres } from "../../../src/store/postgres/migrate";
import { InstanceRegistry } from "../../../src/store/postgres/instances";
import { PostgresLedgerStore } from "../../../src/store/postgres/ledger-store";
import { PgKeyRecords } from "../../../src/store/postgres/accounts";
import { NO_CONTROLS } from "../../../src/accounts/api-keys";
import { sharedPostgres } from "../postgres";
import type { LedgerBackend, Snapshot } from "./backend";

const APP = "switchyard-checker";

export async function postgresBackend(): Promise<LedgerBackend> {
  const server = await sharedPostgres();
  const name = `checker_${process.pid}_${randomBytes(3).toString("hex")}`;
  const url = await server.createDatabase(name);
  const admin = new SQL({ url, max: 2 });
  await migratePostgres(admin);
  const instanceName = `checker-${randomBytes(3).toString("hex")}`;
  let db: PgDatabase | null = null;
  let registry: InstanceRegistry | null = null;
  let locker: Awaited<ReturnType<SQL["reserve"]>> | null = null;
  let full = false;
  /** The newest ledger entry id seen, per account. */
  const lastSeen = new Map<string, number>();

  const lock = async (on: boolean) => {
    if (on && !locker) {
      locker = await admin.reserve();
      await locker`BEGIN`;
      await locker`LOCK TABLE accounts IN EXCLUSIVE MODE`;
    }
    if (!on && locker) {
      await locker`ROLLBACK`;
      locker.release();
      locker = null;
    }
  };
  const diskFull = async (on: boolean) => {
    if (on === full) return;
    // Creating a trigger needs a lock of its own: the other connection lets go for that instant.
    const locked = locker !== null;
    await lock(false);
    if (on) {
      await admin.unsafe(`
        CREATE OR REPLACE FUNCTION checker_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
        CREATE TRIGGER checker_full_holds BEFORE INSERT OR UPDATE ON holds FOR EACH ROW EXECUTE FUNCTION checker_disk_full();
        CREATE TRIGGER checker_full_entries BEFORE INSERT ON ledger_entries FOR EACH ROW EXECUTE FUNCTION checker_disk_full();`).simple();
    } else {
      await admin.unsafe(`DROP TRIGGER checker_full_holds ON holds; DROP TRIGGER checker_full_entries ON ledger_entries;`).simple();
    }
    full = on;
    if (locked) await lock(true);
  };
  const live = () => {
    if (!db) throw new Error("store not open");
    return db;
  };

  return {
    name: "postgres",
    async open() {
      db = new PgDatabase({ url, pool: 4, lockTimeoutMs: 30, statementTimeoutMs: 5_000, applicationName: APP });
      registry = new InstanceRegistry(db, { name: instanceName, timeoutMs: 60_000 });
      await registry.register();
      // Short retries: a post that meets the lock fails fast, and its hold is voided later.
      return new PostgresLedgerStore(db, registry, { retryMs: 60 });
    },
    async createKey(k) {
      await new PgKeyRecords(live()).insert({
        ...NO_CONTROLS, id: k.id, account_id: k.accountId, name: k.id, prefix: "sy-checker", hash: k.id, created_at: 0, revoked_at: null,
        spend_limit: k.limit, limit_reset: k.reset,
      });
    },
    async crash() {
      // The dead process's connection goes, and with it its lock; the full disk is the server's
      // (a trigger), cleared like every fault so the checker's model of faults starts clean.
      await lock(false);
      await diskFull(false);
      registry?.halt();
      const dying = db;
      db = null;
      registry = null;
      await dying?.abandon().catch(() => {});
    },
    async close() {
      await lock(false);
      await diskFull(false).catch(() => {});
      registry?.halt();
      await db?.close().catch(() => {});
      await admin.close();
      await server.dropDatabase(name).catch(() => {});
    },
    diskFull,
    async fsyncFails(on) {
      if (!on) return;
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${APP} AND pid <> pg_backend_pid()`;
    },
    lock,
    /**
     * One REPEATABLE READ transaction, so the state is one committed state. Entries are read per
     * account after the last one seen of that account (`sinceId` is not used): identity values are
     * taken before commit, so across accounts a lower id can commit after a higher one, while
     * within an account the row lock keeps ids in commit order.
     */
    async snapshot() {
      live();
      const num = (v: unknown) => Number(v);
      const tx = await admin.reserve();
      try {
        await tx`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`;
        const accounts = ((await tx`SELECT id, balance, reserved FROM accounts ORDER BY id`) as Record<string, unknown>[]).map((r) => ({
          id: r.id as string, balance: num(r.balance), reserved: num(r.reserved),
        }));
        const pendingByAccount = new Map<string, number>();
        let pendingCount = 0;
        for (const r of (await tx`SELECT account_id, SUM(amount)::text AS s, COUNT(*)::int AS n FROM holds WHERE state = 'pending' GROUP BY account_id`) as {
          account_id: string; s: string; n: number;
        }[]) {
          pendingByAccount.set(r.account_id, Number(r.s));
          pendingCount += r.n;
        }
        const floor = accounts.length > 0 ? Math.min(...accounts.map((a) => lastSeen.get(a.id) ?? 0)) : 0;
        const rows = (await tx`
          SELECT e.id, e.account_id, e.kind, e.amount, e.balance_after, e.request_id, h.amount AS hold_amount, h.state AS hold_state,
                 h.key_id AS hold_key_id, h.period_start AS hold_period,
                 e.input_tokens, e.cached_tokens, e.cache_write_tokens, e.output_tokens, e.cache_saved
            FROM ledger_entries e LEFT JOIN holds h ON h.request_id = e.request_id WHERE e.id > ${floor} ORDER BY e.id`) as Record<string, unknown>[];
        const newEntries = rows
          .map((r) => ({
            id: num(r.id), account_id: r.account_id as string, kind: r.kind as string, amount: num(r.amount), balance_after: num(r.balance_after),
            request_id: (r.request_id as string | null) ?? null, hold_amount: r.hold_amount === null ? null : num(r.hold_amount), hold_state: (r.hold_state as string | null) ?? null,
            hold_key_id: (r.hold_key_id as string | null) ?? null, hold_period: r.hold_period === null || r.hold_period === undefined ? null : num(r.hold_period),
            input_tokens: num(r.input_tokens), cached_tokens: num(r.cached_tokens), cache_write_tokens: num(r.cache_write_tokens),
            output_tokens: num(r.output_tokens), cache_saved: num(r.cache_saved),
          }))
          .filter((e) => e.id > (lastSeen.get(e.account_id) ?? 0));
        for (const e of newEntries) lastSeen.set(e.account_id, e.id);
        const holdStates = new Map<string, string>();
        for (const r of (await tx`SELECT request_id, state FROM holds WHERE state = 'pending'`) as { request_id: string; state: string }[]) {
          holdStates.set(r.request_id, r.state);
        }
        const keys = ((await tx`SELECT id, reserved, period_start, period_spent FROM api_keys ORDER BY id`) as Record<string, unknown>[]).map((r) => ({
          id: r.id as string, reserved: num(r.reserved), period_start: num(r.period_start), period_spent: num(r.period_spent),
        }));
        const pendingByKey = new Map<string, number>();
        for (const r of (await tx`SELECT key_id, SUM(amount)::text AS s FROM holds WHERE state = 'pending' AND key_id IS NOT NULL GROUP BY key_id`) as {
          key_id: string; s: string;
        }[]) pendingByKey.set(r.key_id, Number(r.s));
        await tx`COMMIT`;
        return { accounts, pendingByAccount, pendingCount, newEntries, holdStates, keys, pendingByKey } satisfies Snapshot;
      } catch (e) {
        await tx`ROLLBACK`.catch(() => {});
        throw e;
      } finally {
        tx.release();
      }
    },
  };
}
