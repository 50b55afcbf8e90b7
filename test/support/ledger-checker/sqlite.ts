/** The SQLite engine for the randomized ledger checker: the real store over a temporary database. */
import { mkdtempSync, rmSync, fsync as realFsync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../../../src/store/database";
import { SqliteLedgerStore } from "../../../src/store/sqlite/ledger-store";
import { SqliteKeyRecords } from "../../../src/store/sqlite/accounts";
import { NO_CONTROLS } from "../../../src/accounts/api-keys";
import { fillDisk, holdWriteLock, type DiskFull, type WriteLock } from "../disk";
import type { LedgerBackend, Snapshot } from "./backend";

export interface SqliteBackendOptions {
  /** How long a write waits for the other connection's lock (short: the checker runs thousands of steps). */
  lockWaitMs?: number;
  /** Sync the WAL for real (slow on a shared disk); by default durability is left to the fsync seam. */
  realFsync?: boolean;
}

export function sqliteBackend(options: SqliteBackendOptions = {}): LedgerBackend {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-checker-"));
  let db: Store | null = null;
  let store: SqliteLedgerStore | null = null;
  let disk: DiskFull | null = null;
  let lock: WriteLock | null = null;
  let fsyncFails = false;
  const clearFaults = () => {
    disk?.restore();
    disk = null;
    lock?.release();
    lock = null;
    fsyncFails = false;
  };
  const live = () => {
    if (!db) throw new Error("store not open");
    return db;
  };
  return {
    name: "sqlite",
    async open() {
      db = openStore(dir, { busyTimeoutMs: 0 });
      store = new SqliteLedgerStore(db, {
        lockWaitMs: options.lockWaitMs ?? 20,
        fsync: (fd, cb) => {
          if (fsyncFails) return setImmediate(() => cb(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" })));
          if (options.realFsync) return realFsync(fd, cb);
          setImmediate(() => cb(null));
        },
      });
      return store;
    },
    async createKey(k) {
      await new SqliteKeyRecords(live()).insert({
        ...NO_CONTROLS, id: k.id, account_id: k.accountId, name: k.id, prefix: "sy-checker", hash: k.id, created_at: 0, revoked_at: null,
        spend_limit: k.limit, limit_reset: k.reset,
      });
    },
    crash() {
      // The lock and the full disk belong to the dead process's connection; they go with it.
      clearFaults();
      store?.commits.abandon();
      db?.close();
      db = null;
      store = null;
    },
    close() {
      clearFaults();
      store?.close();
      db?.close();
      rmSync(dir, { recursive: true, force: true });
    },
    diskFull(on) {
      if (on && !disk) {
        // Filling needs the write lock: the other connection lets go and takes it again at once
        // (nothing of the store's runs in between: it writes only from timers and immediates).
        const locked = lock !== null;
        lock?.release();
        disk = fillDisk(live());
        if (locked) lock = holdWriteLock(join(dir, "switchyard.db"));
      }
      if (!on && disk) {
        disk.restore();
        disk = null;
      }
    },
    fsyncFails(on) {
      fsyncFails = on;
    },
    failedFatally: () => store?.commits.failedFatally != null,
    lock(on) {
      if (on && !lock) lock = holdWriteLock(join(dir, "switchyard.db"));
      if (!on && lock) {
        lock.release();
        lock = null;
      }
    },
    snapshot(sinceId) {
      const d = live();
      const accounts = d.query("SELECT id, balance, reserved FROM accounts ORDER BY id").all() as Snapshot["accounts"];
      const pendingByAccount = new Map<string, number>();
      let pendingCount = 0;
      for (const r of d.query("SELECT account_id, SUM(amount) AS s, COUNT(*) AS n FROM holds WHERE state = 'pending' GROUP BY account_id").all() as {
        account_id: string; s: number; n: number;
      }[]) {
        pendingByAccount.set(r.account_id, r.s);
        pendingCount += r.n;
      }
      const newEntries = d
        .query(
          `SELECT e.id, e.account_id, e.kind, e.amount, e.balance_after, e.request_id, h.amount AS hold_amount, h.state AS hold_state,
                  h.key_id AS hold_key_id, h.period_start AS hold_period,
                  e.input_tokens, e.cached_tokens, e.cache_write_tokens, e.output_tokens, e.cache_saved
           FROM ledger_entries e LEFT JOIN holds h ON h.request_id = e.request_id WHERE e.id > ? ORDER BY e.id`,
        )
        .all(sinceId) as Snapshot["newEntries"];
      const holdStates = new Map<string, string>();
      for (const r of d.query("SELECT request_id, state FROM holds WHERE state = 'pending'").all() as { request_id: string; state: string }[]) {
        holdStates.set(r.request_id, r.state);
      }
      const keys = d.query("SELECT id, reserved, period_start, period_spent FROM api_keys ORDER BY id").all() as Snapshot["keys"];
      const pendingByKey = new Map<string, number>();
      for (const r of d.query("SELECT key_id, SUM(amount) AS s FROM holds WHERE state = 'pending' AND key_id IS NOT NULL GROUP BY key_id").all() as {
        key_id: string; s: number;
      }[]) pendingByKey.set(r.key_id, r.s);
      return { accounts, pendingByAccount, pendingCount, newEntries, holdStates, keys, pendingByKey };
    },
  };
}
