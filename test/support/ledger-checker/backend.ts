/**
 * What the randomized ledger checker needs from a store engine: open (and reopen after a crash),
 * crash, inject faults, and read the committed state. One implementation per engine; the
 * simulator (sim.ts) is the same for all. A PostgreSQL backend adds a file beside sqlite.ts.
 */
import type { LedgerStore } from "../../../src/billing/ledger-store";

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
  }[];
  holdStates: Map<string, string>;
}

/**
 * Every method may be synchronous (SQLite) or asynchronous (a database over the network); a fault
 * an engine cannot inject (a full disk on a remote server, say) may be a no-op.
 */
export interface LedgerBackend {
  readonly name: string;
  /** Opens the store over the data (again after a crash: the same data, fresh process state). */
  open(): Promise<LedgerStore>;
  /** Dies as a process would: queued writes are lost, nothing is flushed, faults vanish. */
  crash(): void | Promise<void>;
  close(): void | Promise<void>;
  diskFull(on: boolean): void | Promise<void>;
  fsyncFails(on: boolean): void | Promise<void>;
  /** Another connection takes (or gives back) the write lock. */
  lock(on: boolean): void | Promise<void>;
  /** Committed state, reading entries after `sinceId` only (the checks run after every step). */
  snapshot(sinceId: number): Snapshot | Promise<Snapshot>;
}
