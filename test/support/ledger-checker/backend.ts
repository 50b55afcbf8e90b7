/**
 * What the randomized ledger checker needs from a store engine: open (and reopen after a crash),
 * crash, inject faults, and read the committed state. One implementation per engine; the
 * simulator (sim.ts) is the same for all. A PostgreSQL backend adds a file beside sqlite.ts.
 */
import type { LedgerStore } from "../../../src/billing/ledger-store";
import type { LimitReset } from "../../../src/billing/key-periods";

/** A key with a spend limit (units; null: none) and its reset period. */
export interface CheckerKey {
  id: string;
  accountId: string;
  limit: number | null;
  reset: LimitReset | null;
}

export interface Snapshot {
  accounts: { id: string; balance: number; reserved: number }[];
  /** Σ pending hold amounts per account. */
  pendingByAccount: Map<string, number>;
  pendingCount: number;
  /** Ledger entries with id > `sinceId`, oldest first, each charge with its hold. */
  newEntries: {
    id: number;
    account_id: string;
    kind: string;
    amount: number;
    balance_after: number;
    request_id: string | null;
    hold_amount: number | null;
    hold_state: string | null;
    /** The hold's key and the period its charge belongs to (null for a hold without a key). */
    hold_key_id: string | null;
    hold_period: number | null;
    /** The consumption recorded on a charge: the prompt, what of it was read from and written to the cache, the output. */
    input_tokens: number;
    cached_tokens: number;
    cache_write_tokens: number;
    output_tokens: number;
    /** Units the prompt cache took off the charge. */
    cache_saved: number;
  }[];
  holdStates: Map<string, string>;
  /** Every key's running figures. */
  keys: { id: string; reserved: number; period_start: number; period_spent: number }[];
  /** Σ pending hold amounts per key. */
  pendingByKey: Map<string, number>;
}

/**
 * Every method may be synchronous (SQLite) or asynchronous (a database over the network); a fault
 * an engine cannot inject (a full disk on a remote server, say) may be a no-op.
 */
export interface LedgerBackend {
  readonly name: string;
  /** Opens the store over the data (again after a crash: the same data, fresh process state). */
  open(): Promise<LedgerStore>;
  /** Creates a key through the engine's real key records (the store is open). */
  createKey(k: CheckerKey): Promise<void>;
  /** Dies as a process would: queued writes are lost, nothing is flushed, faults vanish. */
  crash(): void | Promise<void>;
  close(): void | Promise<void>;
  diskFull(on: boolean): void | Promise<void>;
  fsyncFails(on: boolean): void | Promise<void>;
  /**
   * Whether the store failed for good (SQLite: an fsync failed), so the process must stop and be
   * restarted, as the server does. Absent: the engine has no such failure.
   */
  failedFatally?(): boolean;
  /** Another connection takes (or gives back) the write lock. */
  lock(on: boolean): void | Promise<void>;
  /** Committed state, reading entries after `sinceId` only (the checks run after every step). */
  snapshot(sinceId: number): Snapshot | Promise<Snapshot>;
}
