/**
 * The PostgreSQL engine for the randomized ledger checker: the real PostgresLedgerStore over a
 * database of a server of its own (so it can stop it), as two registered instances, each with its
 * own leases and charge journal (in a directory of its own that survives its crashes). Its faults
 * are the database's own:
 *   - lock: another connection holds an EXCLUSIVE lock on `accounts`; the store's lock wait is
 *     short here, so writes fail with lock_not_available (55P03) and retry as they would on a hot row;
 *   - diskFull: a trigger raises disk_full (53100) on every write of holds and ledger entries —
 *     the error a full disk gives, from inside the engine;
 *   - fsyncFails (no such seam on a server): the store's connections are terminated by the
 *     server (pg_terminate_backend) — answers are lost and writes may or may not have committed;
 *   - crash: one instance's process dies — heartbeats stop, the pool is dropped unflushed, its
 *     journal is abandoned on disk — and a new run of the same instance (same name, same journal)
 *     opens the store, ships what the dead run journaled, and releases what it left;
 *   - databaseDown: the server stops (fast shutdown) and starts again.
 */
import { SQL } from "bun";
import { randomBytes } from "node:crypto";
import { PgDatabase } from "../../../src/store/postgres/database";
import { migratePostgres } from "../../../src/store/postgres/migrate";
import { InstanceRegistry } from "../../../src/store/postgres/instances";
import { PostgresLedgerStore } from "../../../src/store/postgres/ledger-store";
import { PgKeyRecords } from "../../../src/store/postgres/accounts";
import { NO_CONTROLS } from "../../../src/accounts/api-keys";
import { startPostgres } from "../postgres";
import { ChargeJournal } from "../../../src/store/postgres/charge-journal";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LedgerBackend, Snapshot } from "./backend";

const APP = "switchyard-checker";

const INSTANCES = 2;

interface Instance {
  name: string;
  dir: string;
  db: PgDatabase | null;
  registry: InstanceRegistry | null;
  store: PostgresLedgerStore | null;
}

export async function postgresBackend(): Promise<LedgerBackend> {
  const server = await startPostgres();
  const name = `checker_${process.pid}_${randomBytes(3).toString("hex")}`;
  const url = await server.createDatabase(name);
  let admin = new SQL({ url, max: 2 });
  await migratePostgres(admin);
  const instances: Instance[] = Array.from({ length: INSTANCES }, (_, i) => ({
    name: `checker-${i}-${randomBytes(3).toString("hex")}`, dir: mkdtempSync(join(tmpdir(), `switchyard-checker-journal-${i}-`)), db: null, registry: null, store: null,
  }));
  let down = false;
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
    const db = instances.find((x) => x.db)?.db;
    if (!db) throw new Error("store not open");
    return db;
  };

  return {
    name: "postgres",
    instances: INSTANCES,
    async open(i) {
      const inst = instances[i]!;
      const db = new PgDatabase({ url, pool: 4, lockTimeoutMs: 30, statementTimeoutMs: 5_000, applicationName: APP });
      const registry = new InstanceRegistry(db, { name: inst.name, timeoutMs: 60_000 });
      await registry.register();
      // Short retries: a post that meets the lock fails fast, and its hold is voided later. A
      // short recall: the checker runs thousands of steps, and a refusal waits for it.
      const store = new PostgresLedgerStore(db, registry, {
        retryMs: 60, recallMs: 30,
        journal: (ship, shipped) => new ChargeJournal(inst.dir, { ship, shipped, shipMs: 2 }),
      });
      Object.assign(inst, { db, registry, store });
      return store;
    },
    async createKey(k) {
      await new PgKeyRecords(live()).insert({
        ...NO_CONTROLS, id: k.id, account_id: k.accountId, name: k.id, prefix: "sy-checker", hash: k.id, created_at: 0, revoked_at: null,
        spend_limit: k.limit, limit_reset: k.reset,
      });
      for (const x of instances) x.store?.keysChanged();
    },
    async setReset(keyId, reset) {
      await new PgKeyRecords(live()).update(keyId, { limit_reset: reset });
      // What the server's listeners do on the change and the recall it notifies (open.ts).
      for (const x of instances) {
        x.store?.keysChanged();
        await x.store?.recalled(`key:${keyId}`);
      }
    },
    async crash(i) {
      // The dead process's connection goes, and with it its lock; the full disk is the server's
      // (a trigger), cleared like every fault so the checker's model of faults starts clean.
      await lock(false);
      await diskFull(false);
      const inst = instances[i]!;
      inst.registry?.halt();
      inst.store?.journal?.abandon();
      const dying = inst.db;
      Object.assign(inst, { db: null, registry: null, store: null });
      await dying?.abandon().catch(() => {});
    },
    async close() {
      await lock(false).catch(() => {});
      await diskFull(false).catch(() => {});
      for (const inst of instances) {
        inst.registry?.halt();
        inst.store?.closeJournal();
        await inst.db?.close().catch(() => {});
        rmSync(inst.dir, { recursive: true, force: true });
      }
      await admin.close();
      await server.destroy();
    },
    async databaseDown(on) {
      if (on === down) return;
      if (on) {
        await lock(false);
        await diskFull(false);
        await admin.close();
        await server.stop();
      } else {
        await server.start();
        admin = new SQL({ url, max: 2 });
      }
      down = on;
    },
    async journaled() {
      const ids = new Set<string>();
      for (const inst of instances) {
        const j = inst.store?.journal as unknown as { pendingIds?: () => string[] } | null | undefined;
        for (const id of j?.pendingIds?.() ?? []) ids.add(id);
      }
      return ids;
    },
    async ship() {
      for (const inst of instances) await inst.store?.journal?.drain(30_000);
    },
    leaseMirror(i) {
      const inst = instances[i]!;
      return inst.store && inst.registry ? { run: inst.registry.id, leases: inst.store.leases } : null;
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
        const accounts = ((await tx`SELECT id, balance, reserved, leased FROM accounts ORDER BY id`) as Record<string, unknown>[]).map((r) => ({
          id: r.id as string, balance: num(r.balance), reserved: num(r.reserved), leased: num(r.leased),
        }));
        const pendingByAccount = new Map<string, number>();
        const pendingIds = new Set<string>();
        for (const r of (await tx`SELECT request_id, account_id, amount::text AS amount FROM holds WHERE state = 'pending'`) as { request_id: string; account_id: string; amount: string }[]) {
          pendingByAccount.set(r.account_id, (pendingByAccount.get(r.account_id) ?? 0) + Number(r.amount));
          pendingIds.add(r.request_id);
        }
        const floor = accounts.length > 0 ? Math.min(...accounts.map((a) => lastSeen.get(a.id) ?? 0)) : 0;
        const rows = (await tx`
          SELECT id, account_id, kind, amount, balance_after, request_id, key_id, counted_at,
                 input_tokens, cached_tokens, cache_write_tokens, output_tokens, cache_saved
            FROM ledger_entries WHERE id > ${floor} ORDER BY id`) as Record<string, unknown>[];
        const newEntries = rows
          .map((r) => ({
            id: num(r.id), account_id: r.account_id as string, kind: r.kind as string, amount: num(r.amount), balance_after: num(r.balance_after),
            request_id: (r.request_id as string | null) ?? null, key_id: (r.key_id as string | null) ?? null, counted_at: r.counted_at === null ? null : num(r.counted_at),
            input_tokens: num(r.input_tokens), cached_tokens: num(r.cached_tokens), cache_write_tokens: num(r.cache_write_tokens),
            output_tokens: num(r.output_tokens), cache_saved: num(r.cache_saved),
          }))
          .filter((e) => e.id > (lastSeen.get(e.account_id) ?? 0));
        for (const e of newEntries) lastSeen.set(e.account_id, e.id);
        const keys = ((await tx`SELECT id, reserved, leased, period_start, period_spent, limit_reset FROM api_keys ORDER BY id`) as Record<string, unknown>[]).map((r) => ({
          id: r.id as string, reserved: num(r.reserved), leased: num(r.leased), period_start: num(r.period_start), period_spent: num(r.period_spent),
          limit_reset: (r.limit_reset as Snapshot["keys"][number]["limit_reset"]) ?? null,
        }));
        const pendingByKey = new Map<string, number>();
        for (const r of (await tx`SELECT key_id, SUM(amount)::text AS s FROM holds WHERE state = 'pending' AND key_id IS NOT NULL GROUP BY key_id`) as {
          key_id: string; s: string;
        }[]) pendingByKey.set(r.key_id, Number(r.s));
        const leases = new Map<string, number>();
        for (const r of (await tx`SELECT instance_id, kind, subject, amount::text AS amount FROM leases`) as { instance_id: string; kind: string; subject: string; amount: string }[]) {
          leases.set(`${r.instance_id}|${r.kind}|${r.subject}`, Number(r.amount));
        }
        await tx`COMMIT`;
        return { accounts, pendingByAccount, pendingIds, newEntries, keys, pendingByKey, leases } satisfies Snapshot;
      } catch (e) {
        await tx`ROLLBACK`.catch(() => {});
        throw e;
      } finally {
        tx.release();
      }
    },
  };
}
