/**
 * The credit ledger: two-phase transfers (after TigerBeetle's pending → post | void) over a
 * storage port (ledger-store.ts), written once for every store. A request reserves a Hold (hold.ts)
 * before any work, then settles it (one charge of at most its amount) or releases it.
 *
 * Holds live in memory (hold-book.ts): a hold is a reservation against what this process may
 * spend for the account and key, so nothing durable is written before the upstream call starts;
 * only charges are durable, group-committed. After a crash no hold survives, and every
 * acknowledged charge is on disk. (PostgreSQL's direct path for small balances writes its holds
 * in the database instead; those are voided there, retried while it cannot write.)
 *
 * Invariants — each is enforced here, by the hold book or by the store, asserted where it can
 * break, and tested (ledger.test.ts, hold expiry in ledger-lifecycle.test.ts, and the seeded
 * randomized checker, test/ledger-checker.test.ts):
 *   1. balance ≥ 0, always (store CHECK constraints; holds are granted only from what is available).
 *   2. held(account) = Σ amounts of its open holds, and what is held never exceeds what the store
 *      lets this process spend: the balance (SQLite), or its lease plus direct holds (PostgreSQL).
 *   3. A charge never exceeds its hold: charged ≤ hold.amount (Hold.quote clamps, post() asserts,
 *      the store refuses more). It is taken from the balance it held, so it never touches another
 *      request's hold nor unheld balance.
 *   4. Σ entries (charges, credits, debits) = balance: the newest entry's balance_after is the balance.
 *   5. One charge per request id; a repeated settle returns the first charge.
 *   6. Every hold is posted or released exactly once; none stays open after its request ends
 *      (release() in the request's finally), nor once it is older than the hold expiry, whatever
 *      its request does (hold-expiry.ts); after a restart none exists (memory) or is left pending
 *      (the store's direct holds of a previous run are voided: releaseAbandoned).
 *   7. A failed request (error status, stream error, failed settle) is never charged.
 *   8. Charges are durable before the response completes; a charge whose fsync failed is never
 *      acknowledged, and the store refuses every write after it (SQLite: the server stops; see
 *      store/sqlite/group-commit.ts).
 *   9. A key's charges in its period plus what is held against it never exceed its spend limit,
 *      and its period never moves backwards (billing/key-periods.ts).
 *
 * Store health: when the store cannot write (StoreUnavailable: disk full, database locked past the
 * bounded wait, unreachable), new holds are refused with 503 service_unavailable before any
 * upstream is called, and probed again after PROBE_INTERVAL_MS (store-health.ts). Voids the store
 * could not write are queued and retried (void-retries.ts), at once when a write succeeds.
 *
 * Over-reported usage: see Hold.quote. Each clamp is logged (request id, endpoint, model, reported
 * and held amounts) and counted by onClamped listeners (switchyard_charge_clamps_total).
 */
import { DomainError, InternalError, insufficientCredits, keyLimitExceeded, serviceUnavailable } from "../errors";
import { nextReset, periodStarts } from "./key-periods";
import type { Log } from "../log";
import { formatUsd, MAX_BALANCE } from "./money";
import { StoreUnavailable, type ChargeRecord, type GrantResult, type LedgerEntryRow, type LedgerStore, type PostRequest, type PostResult } from "./ledger-store";
import { DEFAULT_HOLD_EXPIRY_SECONDS, HoldExpiry } from "./hold-expiry";
import { Hold, type HoldLedger, type HoldSpec, type Quote, type SettleRequest, type Settlement, type VoidOutcome } from "./hold";
import { HoldBook } from "./hold-book";
import { PROBE_INTERVAL_MS, StoreHealth } from "./store-health";
import { VoidRetries } from "./void-retries";
import type { ClampRecord, HoldEvent, LedgerOptions } from "./ledger-types";

export { MAX_BALANCE, PROBE_INTERVAL_MS, type ClampRecord, type HoldEvent, type LedgerOptions };

export class Ledger implements HoldLedger {
  private readonly settledListeners: ((c: ChargeRecord) => void)[] = [];
  private readonly holdListeners: ((e: HoldEvent) => void)[] = [];
  private readonly clampListeners: ((c: ClampRecord) => void)[] = [];
  /** Holds reserved and not yet posted or voided (queued voids included). */
  private open = 0;
  /** The holds this process has booked in memory, per account and key. */
  readonly book = new HoldBook();
  private closed = false;

  private readonly now: () => number;
  private readonly expiry: HoldExpiry;
  /** Whether the store writes (new holds are refused while it does not). */
  private readonly health: StoreHealth;
  /** Voids the store could not write yet. */
  private readonly voidRetries: VoidRetries;

  constructor(private readonly store: LedgerStore, private readonly log: Log, options: LedgerOptions = {}) {
    this.now = options.now ?? Date.now;
    this.expiry = new HoldExpiry(store, log, options.holdExpirySeconds ?? DEFAULT_HOLD_EXPIRY_SECONDS, this.now);
    this.health = new StoreHealth(log, options.probeIntervalMs ?? PROBE_INTERVAL_MS, () => this.voidRetries.wake());
    this.voidRetries = new VoidRetries({ voidDirect: (requestId) => store.voidDirect!(requestId), health: this.health, log, closeVoided: (hold) => this.closeVoided(hold) });
    store.onFailure?.((e) => this.health.markUnavailable(e));
  }

  /**
   * Holds price(budget) against the account's available balance — and, for a request made with a
   * key, against what the key's spend limit has left in its period, in the same write — before any
   * work. Throws 402 insufficient_credits or key_limit_exceeded when it cannot be covered, 503
   * service_unavailable when the store cannot write.
   */
  async reserve(spec: HoldSpec): Promise<Hold> {
    const amount = spec.price(spec.budget);
    if (!Number.isSafeInteger(amount) || amount < 0) throw new InternalError(`bad hold amount ${amount}`);
    if (this.health.refusing()) throw serviceUnavailable();
    const epoch = this.health.epoch;
    const now = this.now();
    const createdAt = this.expiry.dateNow();
    let outcome: GrantResult;
    try {
      const key = spec.key ? { id: spec.key.id, periods: periodStarts(now) } : undefined;
      const granted = this.store.grant({ requestId: spec.requestId, accountId: spec.accountId, amount, endpoint: spec.endpoint, model: spec.model, key, createdAt }, this.book);
      outcome = granted instanceof Promise ? await granted : granted;
    } catch (e) {
      if (e instanceof StoreUnavailable) {
        this.health.markUnavailable(e);
        // Lost in transit, a direct hold may exist after all: void it once the store answers again.
        if (e.reason === "unreachable" && this.store.voidDirect) this.voidRetries.queue(spec.requestId, null);
        throw serviceUnavailable();
      }
      throw this.internal("reserve", spec.requestId, e);
    }
    if (outcome.ok && outcome.direct) this.health.markHealthy(epoch);
    if (!outcome.ok && outcome.keyLimit !== undefined) {
      const reset = spec.key?.limitReset ?? null;
      throw keyLimitExceeded(formatUsd(amount), formatUsd(outcome.keyLimit), formatUsd(outcome.available), reset, nextReset(reset, now));
    }
    if (!outcome.ok) throw insufficientCredits(formatUsd(amount), formatUsd(outcome.available));
    if (!outcome.direct && !this.book.has(spec.requestId)) throw new InternalError(`the store granted ${spec.requestId} without booking it`);
    this.open++;
    const hold = new Hold(this, spec, amount, { direct: outcome.direct, createdAt });
    this.expiry.track(hold);
    this.holdEvent(hold, "pending");
    return hold;
  }

  /** What this process holds for the account's requests in flight (booked in memory). */
  held(accountId: string): number {
    return this.book.held(accountId);
  }

  /** What this process holds against the key's spend limit. */
  heldByKey(keyId: string): number {
    return this.book.heldByKey(keyId);
  }

  /** HoldLedger: writes a hold's charge (Hold.settle calls this once per attempt). */
  async post(hold: Hold, quote: Quote, request: SettleRequest): Promise<Settlement> {
    if (quote.amount > hold.amount) throw new InternalError(`charge of ${quote.amount} above its hold of ${hold.amount} (${hold.requestId})`);
    const epoch = this.health.epoch;
    let r;
    try {
      // Once the charge is committed the balance has it: the hold stops counting at that moment.
      r = await this.store.post(postRequest(hold, quote, request), () => this.book.remove(hold.requestId));
    } catch (e) {
      if (e instanceof StoreUnavailable) {
        this.health.markUnavailable(e);
        throw serviceUnavailable();
      }
      throw this.internal("settle", hold.requestId, e);
    }
    this.health.markHealthy(epoch);
    this.open--;
    this.expiry.forget(hold.requestId);
    this.holdEvent(hold, "posted");
    if (quote.clamped) this.noteClamp(hold, quote);
    // Listeners hear only of charges that are durable, once each (not of idempotent repeats).
    if (r.fresh) this.notifySettled(hold, quote, request, r.charged);
    return settlementOf(hold, quote, r);
  }

  private notifySettled(hold: Hold, quote: Quote, request: SettleRequest, charged: number): void {
    const charge: ChargeRecord = {
      requestId: hold.requestId, accountId: hold.accountId, endpoint: hold.endpoint, model: hold.model, serviceTier: request.serviceTier,
      charged, ...quote.recorded,
    };
    for (const l of this.settledListeners) {
      try {
        l(charge);
      } catch {
        // A metrics listener must never turn a durable charge into a failed request.
      }
    }
  }

  /**
   * HoldLedger: voids a hold now, or queues the void for when the store writes again. A hold whose
   * settle failed and which has nothing pending any more stays open here: its charge may have
   * been written (the answer was lost), and Hold asks recover() for it.
   */
  async void(hold: Hold): Promise<VoidOutcome> {
    if (!hold.direct) {
      // Booked in memory: released at once. Not booked any more: its charge was committed.
      if (this.book.remove(hold.requestId)) {
        this.closeVoided(hold);
        return "voided";
      }
      if (hold.chargeMayExist) return "absent";
      this.closeVoided(hold);
      return "absent";
    }
    const epoch = this.health.epoch;
    try {
      const voided = await this.store.voidDirect!(hold.requestId);
      this.health.markHealthy(epoch);
      if (!voided && hold.chargeMayExist) return "absent";
      this.closeVoided(hold);
      return voided ? "voided" : "absent";
    } catch (e) {
      if (e instanceof StoreUnavailable) this.health.markUnavailable(e);
      else this.log.error("ledger void failed; retrying", { request_id: hold.requestId, error: String((e as Error)?.message ?? e).slice(0, 300) });
      this.voidRetries.queue(hold.requestId, hold);
      return "queued";
    }
  }

  /**
   * HoldLedger: a hold whose settle failed has nothing pending — the post committed and only its
   * answer was lost. A repeated post (idempotent) returns that first charge: the request IS
   * charged, listeners hear of it now, and the hold closes as posted. Null (closed as released)
   * when no charge turns up: the hold was voided elsewhere (a survivor released this instance).
   */
  async recover(hold: Hold, quote: Quote, request: SettleRequest): Promise<Settlement | null> {
    let r;
    try {
      r = await this.store.post(postRequest(hold, quote, request));
    } catch (e) {
      if (e instanceof StoreUnavailable) this.health.markUnavailable(e);
      this.log.warn("a hold whose charge could not be confirmed has nothing pending; the client is not told it was not billed", { request_id: hold.requestId });
      this.closeVoided(hold);
      return null;
    }
    this.open--;
    this.expiry.forget(hold.requestId);
    this.holdEvent(hold, "posted");
    this.log.warn("a charge whose answer was lost had been written: the request is charged", { request_id: hold.requestId, charged_usd: formatUsd(r.charged) });
    if (quote.clamped) this.noteClamp(hold, quote);
    this.notifySettled(hold, quote, request, r.charged);
    return settlementOf(hold, quote, r);
  }

  private closeVoided(hold: Hold | null): void {
    if (!hold || hold.status === "released") return;
    hold.markReleased();
    this.open--;
    this.expiry.forget(hold.requestId);
    this.holdEvent(hold, "voided");
  }

  private holdEvent(hold: Hold, state: HoldEvent["state"]): void {
    if (this.holdListeners.length === 0) return;
    const e: HoldEvent = { requestId: hold.requestId, accountId: hold.accountId, amount: hold.amount, state };
    for (const l of this.holdListeners) {
      try {
        l(e);
      } catch {
        // observers only
      }
    }
  }

  /** Calls `listener` when a hold is taken, charged, or released unposted. */
  onHold(listener: (e: HoldEvent) => void): void {
    this.holdListeners.push(listener);
  }

  /** Releases the holds open past their expiry (hold-expiry.ts); never rejects. */
  expireHolds(): Promise<number> {
    return this.expiry.sweep({
      closeExpired: (hold) => {
        if (!hold.direct) this.book.remove(hold.requestId);
        this.closeVoided(hold);
      },
      failed: (e) => {
        if (e instanceof StoreUnavailable) this.health.markUnavailable(e);
        else this.log.error("hold expiry failed; retrying at the next sweep", { error: String((e as Error)?.message ?? e).slice(0, 300) });
      },
    });
  }

  /** Sweeps expired holds every `intervalMs` until close(). */
  startExpirySweep(intervalMs: number): void {
    if (!this.closed) this.expiry.start(intervalMs, () => this.expireHolds());
  }

  private noteClamp(hold: Hold, quote: Quote): void {
    const c: ClampRecord = { requestId: hold.requestId, endpoint: hold.endpoint, model: hold.model, reported: quote.reportedAmount, held: hold.amount };
    this.log.warn("usage reported above the hold; charge clamped to the hold", {
      request_id: c.requestId, endpoint: c.endpoint, model: c.model, reported_usd: formatUsd(c.reported), held_usd: formatUsd(c.held), charged_usd: formatUsd(quote.amount),
    });
    for (const l of this.clampListeners) {
      try {
        l(c);
      } catch {
        // metrics only
      }
    }
  }

  private internal(op: string, requestId: string, e: unknown): DomainError {
    if (e instanceof DomainError) return e;
    return new InternalError(`ledger ${op} of ${requestId} failed: ${String((e as Error)?.message ?? e)}`);
  }

  /** Store failures outside a request (credits, accounts) as domain errors: 503, or the rule broken. */
  private async write<T>(op: string, run: () => Promise<T>): Promise<T> {
    const epoch = this.health.epoch;
    try {
      const value = await run();
      this.health.markHealthy(epoch);
      return value;
    } catch (e) {
      if (e instanceof StoreUnavailable) {
        this.health.markUnavailable(e);
        throw serviceUnavailable();
      }
      if (e instanceof DomainError) throw e;
      throw new InternalError(`ledger ${op} failed: ${String((e as Error)?.message ?? e)}`);
    }
  }

  /**
   * Adds (positive) or deducts (negative) credits as one immutable entry. A deduction may not dig
   * into money reserved by requests in flight; the balance may not pass MAX_BALANCE.
   */
  adjust(accountId: string, amount: number, reason: string): Promise<{ balanceAfter: number }> {
    return this.write("adjust", () => this.store.adjust(accountId, amount, reason, this.book));
  }

  /** Creates an account and its opening credits in one transaction. */
  openAccount(account: { id: string; name: string; createdAt: number }, credits: number, reason: string): Promise<void> {
    return this.write("account creation", () => this.store.createAccount(account, credits, reason));
  }

  /** At start-up: voids the holds of requests that died with the previous process. */
  releaseAbandoned(): Promise<number> {
    return this.write("start-up release", () => this.store.releaseAbandoned());
  }

  async entries(accountId: string, limit = 1000): Promise<LedgerEntryRow[]> {
    // A read proves nothing about writing: the store's health is left as it is.
    try {
      return await this.store.entries(accountId, limit);
    } catch (e) {
      if (e instanceof StoreUnavailable) throw serviceUnavailable();
      throw new InternalError(`ledger entries failed: ${String((e as Error)?.message ?? e)}`);
    }
  }

  /** False while the last write failed and no write succeeded since (new requests get 503). */
  writable(): boolean {
    return this.health.writable;
  }

  /** Holds not yet posted or released: requests in flight, and voids waiting for the store. */
  pendingHolds(): number {
    return this.open;
  }

  /** Voids still waiting for the store to write again. */
  queuedVoids(): number {
    return this.voidRetries.size;
  }

  /** Tries the queued voids now instead of at the next retry (shutdown; the randomized checker). */
  retryVoidsNow(): Promise<void> {
    return this.voidRetries.now();
  }

  /** Whether the store failed recently (new holds are being refused or probed). */
  get storeUnavailable(): boolean {
    return !this.health.writable;
  }

  /** Calls `listener` after each new charge is durable (metrics). */
  onSettled(listener: (c: ChargeRecord) => void): void {
    this.settledListeners.push(listener);
  }

  /** Calls `listener` for each charge clamped to its hold (metrics). */
  onClamped(listener: (c: ClampRecord) => void): void {
    this.clampListeners.push(listener);
  }

  /** Stops retrying (shutdown, or a simulated crash); the store is closed by its owner. */
  close(): void {
    this.closed = true;
    this.expiry.stop();
    this.voidRetries.close();
  }
}

/** The store's post of a hold's charge (a first attempt and a recovery write the same). */
function postRequest(hold: Hold, quote: Quote, request: SettleRequest): PostRequest {
  return {
    requestId: hold.requestId, accountId: hold.accountId, keyId: hold.keyId, amount: quote.amount, holdAmount: hold.amount, direct: hold.direct,
    holdCreatedAt: hold.createdAt, endpoint: hold.endpoint, model: hold.model, serviceTier: request.serviceTier,
    note: [quote.clamped ? "clamped to hold" : null, hold.priceNote].filter((n) => n !== null).join("; ") || null,
    storedResponse: request.storedResponse, cacheSaved: quote.cacheSaved, ...quote.recorded,
  };
}

function settlementOf(hold: Hold, quote: Quote, r: PostResult): Settlement {
  return { ...quote, requestId: hold.requestId, charged: r.charged };
}
