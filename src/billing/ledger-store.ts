/**
 * The ledger's storage port: what a store must do for the ledger (billing/ledger.ts), whichever
 * engine it runs on. Two implementations: the embedded SQLite store (one process per data
 * directory) and PostgreSQL (any number of instances sharing one database). The ledger — the
 * hold lifecycle, the ceiling rule, retries and metrics — is written once, above this port.
 *
 * Holds live in memory (billing/hold-book.ts): a store grants a hold by booking it against what
 * this process may spend for the account (SQLite: its balance; PostgreSQL: this instance's lease)
 * — nothing durable is written — or, where a store keeps holds of its own (PostgreSQL's direct
 * path for small balances), by writing one. Only charges and credits are durable.
 *
 * Every write is atomic: it happens entirely or not at all. Amounts are integers of nano-USD.
 * A store never decides policy (clamping, who pays what); it enforces the invariants it can
 * check itself and refuses anything that would break them, so a bug above it cannot corrupt money:
 *   - grant() books a hold only while what this process holds plus the hold fits what it may
 *     spend (never overspends), and a key's hold only within what its limit has left;
 *   - post() refuses an amount above its hold's, and charges a request id at most once
 *     (idempotent repeats return the first charge);
 *   - balance ≥ 0 at all times (CHECK constraints too);
 *   - ledger entries are immutable.
 */
import type { HoldBook } from "./hold-book";

/** A hold to grant: the most a request may cost, taken from what the account can spend. */
export interface GrantRequest {
  requestId: string;
  accountId: string;
  amount: number;
  /** API path recorded with the charge ("/v1/chat/completions"). */
  endpoint: string;
  /** Public model id as requested ("glm-4.6-turbo"). */
  model: string;
  /**
   * The key the request was made with: the hold must also fit what the key's spend limit has left
   * in its current period (by the ledger's clock: `periods`), and its charge counts against the key.
   */
  key?: { id: string; periods: PeriodStarts };
  /** When the hold was taken (Unix seconds), by the ledger's clock (default: now); the hold expires by it. */
  createdAt?: number;
}

export type GrantResult =
  /** `direct`: the store wrote a hold of its own, which is posted or voided there. */
  | { ok: true; direct: boolean }
  /** The available balance (balance − what is held) that could not cover the hold. */
  | { ok: false; available: number; keyLimit?: undefined }
  /** The key's spend limit, and what it has left in the period, could not cover the hold. */
  | { ok: false; available: number; keyLimit: number };

import type { PeriodStarts } from "./key-periods";

/** What one request consumed, as recorded on its charge entry. */
export interface Consumption {
  inputTokens?: number;
  outputTokens?: number;
  /** Of the input, tokens the upstream served from its prompt cache. */
  cachedTokens?: number;
  /** Of the input, tokens the upstream wrote to its prompt cache. */
  cacheWriteTokens?: number;
  /** Of the output, tokens spent on reasoning. */
  reasoningTokens?: number;
  /** Speech: Unicode code points synthesised. */
  characters?: number;
}

/** Charges a granted hold: `amount` ≤ the hold's amount, already decided by the ledger. */
export interface PostRequest extends Consumption {
  requestId: string;
  accountId: string;
  /** The key whose spend the charge counts against (null: none). */
  keyId: string | null;
  amount: number;
  /** The hold's amount: the store refuses a charge above it. */
  holdAmount: number;
  /** The hold was written in the store (PostgreSQL's direct path), not booked in memory. */
  direct: boolean;
  /** When the hold was taken (Unix seconds): the key's period the charge counts in is read from it. */
  holdCreatedAt: number;
  endpoint: string;
  model: string;
  serviceTier: string;
  /** Why the charge differs from what was reported (e.g. "clamped to hold"), or null. */
  note?: string | null;
  /** Units the prompt cache took off the charge (Quote.cacheSaved); recorded on the entry. */
  cacheSaved?: number;
  /**
   * A stored Responses turn written in the same transaction as the charge, so a client is never
   * charged for a turn that was not stored (nor finds a turn stored that was not charged).
   */
  storedResponse?: StoredResponseRecord;
}

export interface StoredResponseRecord {
  id: string;
  accountId: string;
  previousResponseId: string | null;
  inputItems: Record<string, unknown>[];
  response: Record<string, unknown>;
  createdAt: number;
  /**
   * The account's storage quota in bytes: after writing this turn, the store deletes the
   * account's oldest turns (never this one) until its total is within it. Absent: no quota.
   */
  quotaBytes?: number;
}

export interface PostResult {
  charged: number;
  /** The balance after the charge; null when its entry is written later (PostgreSQL's charge journal). */
  balanceAfter: number | null;
  /** False when this request id was already charged: the first charge is returned, nothing new was taken. */
  fresh: boolean;
}

/** A new charge, durable, for metrics listeners. */
export interface ChargeRecord extends Consumption {
  requestId: string;
  accountId: string;
  endpoint: string;
  model: string;
  serviceTier: string;
  charged: number;
}

export interface LedgerEntryRow {
  id: number;
  account_id: string;
  kind: "charge" | "credit" | "debit";
  amount: number;
  balance_after: number;
  request_id: string | null;
  endpoint: string | null;
  model: string | null;
  service_tier: string | null;
  input_tokens: number;
  output_tokens: number;
  /** Of input_tokens, read from and written to the upstream's prompt cache. */
  cached_tokens: number;
  cache_write_tokens: number;
  /** Units the prompt cache took off the charge. */
  cache_saved: number;
  characters: number;
  reason: string | null;
  created_at: number;
}

/**
 * Thrown (or rejected with) by a store that cannot write right now: disk full, database locked
 * past the bounded wait, database unreachable. The ledger turns it into 503 service_unavailable
 * before any upstream is called, and retries releases until the store writes again.
 */
export class StoreUnavailable extends Error {
  constructor(
    readonly reason: "full" | "locked" | "unreachable" | "io",
    detail: string,
    /** The store will write nothing more (a failed fsync): refuse until the process restarts. */
    readonly final = false,
  ) {
    super(detail);
  }
}

export interface LedgerStore {
  /**
   * Grants a hold: books it in `book` (synchronously, in the same turn as the check) when what
   * this process holds for the account — and for the key — plus `amount` fits what it may spend,
   * or writes a hold of its own (direct), or refuses. Rejects with StoreUnavailable when it must
   * ask a store that cannot answer.
   */
  grant(g: GrantRequest, book: HoldBook): GrantResult | Promise<GrantResult>;

  /**
   * Charges a granted hold `p.requestId` with `p.amount` (≤ its hold, else it rejects): balance
   * −= amount, one immutable charge entry (with `storedResponse`, if any, in the same
   * transaction), the key's spend counted. `committed` is called synchronously once the charge is
   * committed, before it is durable (the ledger then stops counting its hold: the balance has the
   * charge). Resolves only once durable. Idempotent per request id: a repeat resolves with the
   * first charge (fresh: false). Rejects with StoreUnavailable when it cannot write — also when its
   * commit succeeded but the sync after it failed: never acknowledged unless durable.
   */
  post(p: PostRequest, committed?: () => void): Promise<PostResult>;

  /**
   * Voids a hold the store wrote itself (a direct grant): resolves true when it was pending,
   * false when there was none (posted or voided before). Absent on stores that never write holds.
   * Rejects with StoreUnavailable when it cannot write; the ledger retries until it can.
   */
  voidDirect?(requestId: string): Promise<boolean>;

  /**
   * Adds (positive) or deducts (negative) credits as one immutable entry. A deduction may not take
   * the balance below what is held (this process's `book`, and whatever the store knows is held
   * elsewhere); the balance may not pass the maximum. Rejects with a DomainError naming `amount`
   * when a rule is broken.
   */
  adjust(accountId: string, amount: number, reason: string, book: HoldBook): Promise<{ balanceAfter: number }>;

  /**
   * Opens an account with `credits` (≥ 0, in units) as ONE transaction: the account row and, when
   * credits > 0, its first credit entry (with `reason`). So a failed write leaves no account behind
   * and a retry cannot duplicate one. Rejects with a DomainError naming `credits` when the amount
   * passes the maximum balance, or with StoreUnavailable.
   */
  createAccount(a: { id: string; name: string; createdAt: number }, credits: number, reason: string): Promise<void>;

  /**
   * At start-up: gives back what a previous run of this process held in the store (holds written
   * by earlier versions or by the direct path, leases). Returns how many holds it voided.
   */
  releaseAbandoned(): Promise<number>;

  /**
   * Voids every direct hold pending since before `createdBefore` (Unix seconds), whatever happened
   * to its request. Returns the request ids voided. Stores without direct holds return none.
   */
  expireHolds(createdBefore: number): Promise<string[]>;

  /** Direct holds pending in the store (for the holds-open gauge and tests). */
  pendingHolds(): Promise<number>;

  /** An account's ledger entries, newest first. */
  entries(accountId: string, limit: number): Promise<LedgerEntryRow[]>;

  /**
   * Optional: hears failures no call's promise can carry (writes that expired waiting for a lock,
   * a failed fsync). The ledger then refuses new holds until a write succeeds again.
   */
  onFailure?(listener: (e: StoreUnavailable) => void): void;
}
