/**
 * What the randomized ledger checker needs from a store engine: open instances (and reopen one
 * after its crash), crash them, inject faults, change keys, and read the committed state. One
 * implementation per engine; the simulator (sim.ts) is the same for all. SQLite serves one
 * instance (one process owns a data directory); PostgreSQL several, sharing the database, each
 * with its own leases and charge journal.
 */
import type { LedgerStore } from "../../../src/billing/ledger-store";
import type { LimitReset } from "../../../src/billing/key-periods";
import type { CreditLeases } from "../../../src/store/postgres/credit-leases";

/** A key with a spend limit (units; null: none) and its reset period. */
export interface CheckerKey {
  id: string;
  accountId: string;
  limit: number | null;
  reset: LimitReset | null;
}

export interface SnapshotEntry {
  id: number;
  account_id: string;
  kind: string;
  amount: number;
  balance_after: number;
  request_id: string | null;
  /** The key the charge counts against, and when it counts for its periods. */
  key_id: string | null;
  counted_at: number | null;
  input_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  cache_saved: number;
}

export interface Snapshot {
  /** `reserved`: direct holds the store wrote; `leased`: what instances lease (0 on SQLite). */
  accounts: { id: string; balance: number; reserved: number; leased: number }[];
  /** Σ pending direct hold amounts per account, and their request ids. */
  pendingByAccount: Map<string, number>;
  pendingIds: Set<string>;
  /** Ledger entries not seen before, oldest first (per account). */
  newEntries: SnapshotEntry[];
  /** Every key's running figures as stored. */
  keys: { id: string; reserved: number; leased: number; period_start: number; period_spent: number; limit_reset: LimitReset | null }[];
  /** Σ pending direct hold amounts per key. */
  pendingByKey: Map<string, number>;
  /** Σ lease amounts per instance run, kind and subject ("run|kind|subject"). */
  leases: Map<string, number>;
}

/**
 * Every method may be synchronous (SQLite) or asynchronous (a database over the network); a fault
 * an engine cannot inject may be a no-op.
 */
export interface LedgerBackend {
  readonly name: string;
  /** How many instances serve at once. */
  readonly instances: number;
  /** Opens instance `i` over the data (again after its crash: the same data, fresh process state). */
  open(i: number): Promise<LedgerStore>;
  /** Creates a key through the engine's real key records. */
  createKey(k: CheckerKey): Promise<void>;
  /** Changes a key's limit_reset through the engine's real key records. */
  setReset(keyId: string, reset: LimitReset | null): Promise<void>;
  /** Instance `i` dies as a process would: queued writes are lost, nothing is flushed or given back. */
  crash(i: number): void | Promise<void>;
  close(): void | Promise<void>;
  diskFull(on: boolean): void | Promise<void>;
  fsyncFails(on: boolean): void | Promise<void>;
  /**
   * Whether a store failed for good (SQLite: an fsync failed), so its process must stop and be
   * restarted, as the server does. Absent: the engine has no such failure.
   */
  failedFatally?(i: number): boolean;
  /** Another connection takes (or gives back) the write lock. */
  lock(on: boolean): void | Promise<void>;
  /** The database server stops (true) or starts again (false). Absent: the engine has none. */
  databaseDown?(down: boolean): Promise<void>;
  /** Committed state, reading entries after `sinceId` only (the checks run after every step). */
  snapshot(sinceId: number): Snapshot | Promise<Snapshot>;
  /** Charges journaled by the instances and not shipped yet, by request id (none on SQLite). */
  journaled?(): Promise<Set<string>>;
  /** Ships every instance's journal (quiet points). */
  ship?(): Promise<void>;
  /** Instance `i`'s lease mirror and its current run's id (PostgreSQL). */
  leaseMirror?(i: number): { run: string; leases: CreditLeases } | null;
}
