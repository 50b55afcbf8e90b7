/**
 * The SQLite engine for the randomized ledger checker: the real store over a temporary database,
 * one instance (one process owns a data directory). Holds live in its ledger's memory; the store
 * has only charges and credits, and the legacy holds table stays empty.
 */
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
    instances: 1,
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
    async setReset(keyId, reset) {
      await new SqliteKeyRecords(live()).update(keyId, { limit_reset: reset });
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
      const accounts = (d.query("SELECT id, balance, reserved FROM accounts ORDER BY id").all() as { id: string; balance: number; reserved: number }[]).map((a) => ({ ...a, leased: 0 }));
      const pendingByAccount = new Map<string, number>();
      const pendingIds = new Set<string>();
      for (const r of d.query("SELECT request_id, account_id, amount FROM holds WHERE state = 'pending'").all() as { request_id: string; account_id: string; amount: number }[]) {
        pendingByAccount.set(r.account_id, (pendingByAccount.get(r.account_id) ?? 0) + r.amount);
        pendingIds.add(r.request_id);
      }
      const newEntries = d
        .query(
          `SELECT id, account_id, kind, amount, balance_after, request_id, key_id, counted_at,
                  input_tokens, cached_tokens, cache_write_tokens, output_tokens, cache_saved
           FROM ledger_entries WHERE id > ? ORDER BY id`,
        )
        .all(sinceId) as Snapshot["newEntries"];
      const keys = (d.query("SELECT id, reserved, period_start, period_spent, limit_reset FROM api_keys ORDER BY id").all() as Omit<Snapshot["keys"][number], "leased">[]).map((k) => ({ ...k, leased: 0 }));
      return { accounts, pendingByAccount, pendingIds, newEntries, keys, pendingByKey: new Map(), leases: new Map() };
    },
  };
}
