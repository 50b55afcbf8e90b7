/**
 * The one store interface every part of Switchyard keeps its data through, with two
 * implementations: the embedded SQLite database in SWITCHYARD_DATA_DIR (one process; the
 * default) and PostgreSQL (SWITCHYARD_DATABASE_URL; any number of instances share it). Each part
 * is a port defined beside the domain code that uses it; a store is the set of them plus close().
 * What lives where, and how each behaves when its database fails: docs/scale-out.md.
 */
import type { LedgerStore } from "../billing/ledger-store";
import type { AccountRecords } from "../accounts/accounts";
import type { KeyRecords } from "../accounts/api-keys";
import type { ResponseRecords } from "./responses";
import type { OutcomeRecords } from "../generations/outcomes";
import type { UsageRecords } from "../billing/usage-report";
import type { ChargeRecords } from "../generations/records";
import type { Limiter } from "../limits/limiter";
import type { RevenueRecords } from "../billing/revenue";
import type { RequestLogRecords } from "../generations/request-log";
import type { LiveConfigRecords } from "../catalog/live-records";

export interface DataStore {
  readonly engine: "sqlite" | "postgres";
  /** Holds, charges, credits: the money (billing/ledger-store.ts). */
  readonly ledger: LedgerStore;
  readonly accounts: AccountRecords;
  readonly keys: KeyRecords;
  /** Stored Responses turns (written by the ledger with their charge; read and deleted here). */
  readonly responses: ResponseRecords;
  readonly outcomes: OutcomeRecords;
  /** Usage sums, credits, and charge entries for generation records. */
  readonly usage: UsageRecords & ChargeRecords;
  /** Sums of charges across accounts and the request log, for the operator's dashboard. */
  readonly reports: RevenueRecords & RequestLogRecords;
  /**
   * Where the per-account rate and concurrency state lives: in this process's memory with SQLite
   * (one process serves the data directory), in the database with PostgreSQL (shared by all).
   */
  readonly limiter: Limiter;
  /** Models, upstreams and routes managed live (admin API, CLI), over the files and the embedded catalog. */
  readonly liveConfig: LiveConfigRecords;
  /** Resolves when the database answers a trivial read (readiness, GET /readyz); rejects otherwise. */
  ping(): Promise<void>;
  /** Writes what is queued, then closes (after every user of the store has stopped). */
  close(): Promise<void>;
}
