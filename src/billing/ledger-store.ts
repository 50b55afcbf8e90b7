/**
 * The ledger's storage port: what a store must do for the ledger (billing/ledger.ts), whichever
 * engine it runs on. Two implementations: the embedded SQLite store (one process per data
 * directory) and PostgreSQL (any number of instances sharing one database). The ledger — the
 * hold lifecycle, the ceiling rule, retries and metrics — is written once, above this port.
 *
 * Every method is atomic: it happens entirely or not at all. Amounts are integers of nano-USD.
 * A store never decides policy (clamping, who pays what); it enforces the invariants it can
 * check itself and refuses anything that would break them, so a bug above it cannot corrupt
 * money:
 *   - reserve() raises `reserved` only while balance − reserved ≥ amount (never overspends);
 *   - post() refuses an amount above its hold's and a hold that is not pending (idempotent
 *     repeats return the first charge);
 *   - balance ≥ 0 and reserved ≥ 0 at all times (CHECK constraints too);
 *   - ledger entries are immutable, and there is at most one charge per request id.
 */

/** A hold to create: the most a request may cost, taken from the available balance. */
export interface HoldRequest {
  requestId: string;
  accountId: string;
  amount: number;
  /** API path recorded with the hold and its charge ("/v1/chat/completions"). */
  endpoint: string;
  /** Public model id as requested ("glm-4.6-turbo"). */
  model: string;
  /**
   * The key the request was made with: the hold must also fit what the key's spend limit has left
   * in its current period (same write as the account's), and its charge counts against the key.
   */
  key?: { id: string; periods: PeriodStarts };
  /** When the hold was taken (Unix seconds), by the ledger's clock; the hold expires by it. */
  createdAt?: number;
}

export type ReserveResult =
  | { ok: true }
  /** The available balance (balance − reserved) that could not cover the hold. */
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

/** Posts a pending hold: `amount` ≤ the hold's amount, already decided by the ledger. */
export interface PostRequest extends Consumption {
  requestId: string;
  amount: number;
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
  balanceAfter: number;
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
  constructor(readonly reason: "full" | "locked" | "unreachable" | "io", detail: string) {
    super(detail);
  }
}

export interface LedgerStore {
  /**
   * Creates a pending hold and raises the account's `reserved` by its amount, atomically, only if
   * the available balance covers it. Resolves once the hold is committed (not necessarily
   * fsynced: a hold lost in a crash is voided on restart anyway), so a store that cannot write
   * fails here — before the upstream is called. Rejects with StoreUnavailable when it cannot write.
   */
  reserve(h: HoldRequest): Promise<ReserveResult>;

  /**
   * Posts the pending hold `p.requestId` with `p.amount` (≤ the hold's amount, else it rejects):
   * balance −= amount, reserved −= hold amount, the hold closes as posted, one immutable charge
   * entry is written (with `storedResponse`, if any, in the same transaction). Resolves only once
   * durable. Idempotent per request id: a repeat resolves with the first charge (fresh: false).
   * Rejects when there is no pending hold and no earlier charge, or with StoreUnavailable — also
   * when its commit succeeded but the fsync after it failed: never acknowledged unless durable.
   */
  post(p: PostRequest): Promise<PostResult>;

  /**
   * Voids the pending hold (nothing charged, reserved −= its amount). Resolves true when a
   * pending hold was voided, false when there was none (already posted or voided: a no-op).
   * Resolves once committed. Rejects with StoreUnavailable when it cannot write; the ledger
   * retries until it can.
   */
  void(requestId: string): Promise<boolean>;

  /**
   * Adds (positive) or deducts (negative) credits as one immutable entry. A deduction may not take
   * the balance below what is reserved; the balance may not pass the maximum. Rejects with a
   * DomainError naming `amount` when a rule is broken.
   */
  adjust(accountId: string, amount: number, reason: string): Promise<{ balanceAfter: number }>;

  /**
   * Opens an account with `credits` (≥ 0, in units) as ONE transaction: the account row and, when
   * credits > 0, its first credit entry (with `reason`). So a failed write leaves no account behind
   * and a retry cannot duplicate one. Rejects with a DomainError naming `credits` when the amount
   * passes the maximum balance, or with StoreUnavailable.
   */
  createAccount(a: { id: string; name: string; createdAt: number }, credits: number, reason: string): Promise<void>;

  /**
   * Voids the holds that no live request owns: at start-up, the holds this instance left behind
   * (SQLite: every pending hold, since one process owns the data directory). Returns how many.
   */
  releaseAbandoned(): Promise<number>;

  /**
   * Voids every pending hold created before `createdBefore` (Unix seconds): the store's own
   * bound on how long a hold can stay pending, whatever happened to its request. Voiding never
   * charges, so the invariants stand (reserved = Σ pending holds; a later post of such a hold is
   * refused as one with no pending hold). Returns the request ids voided.
   */
  expireHolds(createdBefore: number): Promise<string[]>;

  /** Pending holds in the store (for the holds-open gauge and tests). */
  pendingHolds(): Promise<number>;

  /** An account's ledger entries, newest first. */
  entries(accountId: string, limit: number): Promise<LedgerEntryRow[]>;

  /**
   * Optional: hears failures no call's promise can carry (writes that expired waiting for a lock,
   * a failed fsync). The ledger then refuses new holds until a write succeeds again.
   */
  onFailure?(listener: (e: StoreUnavailable) => void): void;
}
