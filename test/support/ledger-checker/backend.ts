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

export interface LedgerBackend {
  readonly name: string;
  /** Opens the store over the data (again after a crash: the same data, fresh process state). */
  open(): Promise<LedgerStore>;
  /** Dies as a process would: queued writes are lost, nothing is flushed, faults vanish. */
  crash(): void;
  close(): void;
  diskFull(on: boolean): void;
  fsyncFails(on: boolean): void;
  /** Another connection takes (or gives back) the write lock. */
  lock(on: boolean): void;
  /** Committed state, reading entries after `sinceId` only (the checks run after every step). */
  snapshot(sinceId: number, requestIds?: string[]): Snapshot;
}
