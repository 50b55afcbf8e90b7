/**
 * A hold: the most one request may cost, reserved before any work, and then settled (a charge of
 * at most its amount) or released (nothing charged) — exactly once. Every endpoint uses it the
 * same way:
 *
 *   const hold = await ledger.reserve({ requestId, accountId, endpoint, model, budget, price });
 *   try { ...work...; await hold.settle({ ...usage, serviceTier }); }
 *   finally { await hold.release(); }      // a no-op once posted; never throws
 *
 * (Requests do this through one metered call, src/metering/metered-call.ts.)
 *
 * States: open → settling → posted; settling → open → released when the charge could not be
 * written (settle() then releases the hold itself before it rejects); open → released. release()
 * is idempotent, never rejects, and resolves true only when the hold is known voided (nothing was
 * or can be charged) — the only case in which a client may be told "not billed".
 *
 * A settle can fail although its charge was written: the answer was lost (a connection to the
 * database dropped after the commit). Then the release finds nothing pending, and the hold is
 * posted after all: the first charge is read back (a repeated post returns it), settle() resolves
 * with it, and nobody is ever told "not billed".
 *
 * The ceiling: a hold is sized as price(budget) — the prompt's bound and the output cap, say — and
 * a settlement is priced from the reported usage. Usage that would cost more than the hold is
 * clamped: each quantity is cut to what the budget covers, and the charge to the hold's amount.
 */
import type { Consumption, StoredResponseRecord } from "./ledger-store";
import { DomainError, InternalError, chargeNotRecorded } from "../errors";
import type { LimitReset } from "./key-periods";

/** The price of a consumption in units (nano-USD); must grow with every quantity. */
export type Pricing = (usage: Consumption) => number;

export interface HoldSpec {
  requestId: string;
  accountId: string;
  /** API path recorded with the hold and its charge ("/v1/chat/completions"). */
  endpoint: string;
  /** Public model id as requested. */
  model: string;
  /** The key the request was made with, whose spend limit the hold must fit too (absent: none). */
  key?: { id: string; limitReset: LimitReset | null };
  /** What the hold covers: the most the request may consume. Quantities left out are covered as 0. */
  budget: Consumption;
  price: Pricing;
  /**
   * The prices `price` uses, in words, recorded on the charge: a price changed while the request
   * runs does not change what it pays, and its ledger entry says what that was (billing/prices.ts).
   */
  priceNote?: string;
}

export interface SettleRequest extends Consumption {
  serviceTier: string;
  /** A stored Responses turn, written in the charge's own transaction. */
  storedResponse?: StoredResponseRecord;
}

/** What a settlement will charge and record, decided before it is written. */
export interface Quote {
  amount: number;
  /** The consumption recorded with the charge: as reported, or clamped to the budget. */
  recorded: Consumption;
  clamped: boolean;
  /** The price of the usage as reported (above `amount` when clamped). */
  reportedAmount: number;
  /**
   * What the prompt cache took off the recorded usage's price: its price with every cached and
   * written token priced as input, less its price (negative when writes cost more than reads saved).
   */
  cacheSaved: number;
}

export interface Settlement extends Quote {
  requestId: string;
  /** What was taken from the balance (the first charge's, for a repeated settle). */
  charged: number;
}

/** What a Hold needs from its ledger (billing/ledger.ts). */
export interface HoldLedger {
  /** Writes the charge; rejects with a DomainError (503 when the store cannot write). */
  post(hold: Hold, quote: Quote, request: SettleRequest): Promise<Settlement>;
  /**
   * Voids the hold, or queues the void until the store writes again; never rejects. "absent":
   * nothing was pending (posted or voided before); the ledger leaves a hold whose charge may exist
   * (hold.chargeMayExist) open for recover().
   */
  void(hold: Hold): Promise<VoidOutcome>;
  /** The charge of a hold whose settle failed but which has nothing pending; null when there is none. */
  recover(hold: Hold, quote: Quote, request: SettleRequest): Promise<Settlement | null>;
}

export type VoidOutcome = "voided" | "absent" | "queued";

type HoldState = "open" | "settling" | "posted" | "released";

const QUANTITIES = ["inputTokens", "outputTokens", "characters"] as const;

/** What release() of a posted hold resolves to. */
const POSTED: Promise<boolean> = Promise.resolve(false);

/** How a hold was granted (billing/ledger-store.ts, GrantResult). */
export interface Granted {
  /** Written in the store (PostgreSQL's direct path) rather than booked in memory. */
  direct: boolean;
  /** Unix seconds, by the ledger's clock. */
  createdAt: number;
}

export class Hold implements AsyncDisposable {
  readonly requestId: string;
  readonly accountId: string;
  /** The key whose spend limit it counts against (null: none). */
  readonly keyId: string | null;
  readonly direct: boolean;
  readonly createdAt: number;
  readonly endpoint: string;
  readonly model: string;
  readonly budget: Readonly<Consumption>;
  private readonly price: Pricing;
  readonly priceNote: string | null;
  private state: HoldState = "open";
  /** The write of the charge, once attempted. */
  private settling: Promise<Settlement> | null = null;
  /** What settle() callers get: the charge, or the reason it failed once the hold is released. */
  private settlePromise: Promise<Settlement> | null = null;
  private posted: Settlement | null = null;
  private releasing: Promise<boolean> | null = null;
  /** The settle attempt that failed: its charge may have been written all the same. */
  private failed: { quote: Quote; request: SettleRequest } | null = null;

  constructor(private readonly ledger: HoldLedger, spec: HoldSpec, readonly amount: number, granted: Granted) {
    this.requestId = spec.requestId;
    this.accountId = spec.accountId;
    this.keyId = spec.key?.id ?? null;
    this.direct = granted.direct;
    this.createdAt = granted.createdAt;
    this.endpoint = spec.endpoint;
    this.model = spec.model;
    this.budget = spec.budget;
    this.price = spec.price;
    this.priceNote = spec.priceNote ?? null;
  }

  get status(): HoldState {
    return this.state;
  }

  /** Marks the hold voided; for the ledger, once the void is written. */
  markReleased(): void {
    this.state = "released";
  }

  /** A settle failed without certainty that its charge was not written. */
  get chargeMayExist(): boolean {
    return this.failed !== null;
  }

  /** What settling `usage` would charge and record (pure: nothing is written). */
  quote(usage: Consumption): Quote {
    const reported = pick(usage);
    const reportedAmount = this.price(reported);
    if (reportedAmount <= this.amount) return { amount: reportedAmount, recorded: reported, clamped: false, reportedAmount, cacheSaved: this.cacheSaved(reported, reportedAmount) };
    // Over the ceiling: every quantity is recorded at most as held, and the charge at most the hold.
    const recorded: Consumption = {};
    for (const q of QUANTITIES) if (reported[q] !== undefined) recorded[q] = Math.min(reported[q]!, this.budget[q] ?? 0);
    cacheWithinPrompt(recorded, reported);
    if (reported.reasoningTokens !== undefined) recorded.reasoningTokens = Math.min(reported.reasoningTokens, recorded.outputTokens ?? 0);
    const recordedAmount = this.price(recorded);
    return { amount: Math.min(recordedAmount, this.amount), recorded, clamped: true, reportedAmount, cacheSaved: this.cacheSaved(recorded, recordedAmount) };
  }

  private cacheSaved(c: Consumption, price: number): number {
    if (!c.cachedTokens && !c.cacheWriteTokens) return 0;
    return this.price({ ...c, cachedTokens: 0, cacheWriteTokens: 0 }) - price;
  }

  /**
   * Charges the actual cost (clamped to the hold) and resolves once the charge is durable. A second
   * call returns the first settlement. On failure the hold is open again, for release().
   */
  settle(request: SettleRequest): Promise<Settlement> {
    if (this.posted) return Promise.resolve(this.posted);
    if (this.settlePromise) return this.settlePromise;
    if (this.releasing || this.state !== "open") return Promise.reject(new InternalError(`settle of a ${this.state} hold`));
    let quote: Quote;
    try {
      quote = this.quote(request);
    } catch (e) {
      return Promise.reject(new InternalError(`unpriceable usage: ${(e as Error).message}`));
    }
    this.state = "settling";
    // release() waits for this attempt (never for the public promise below, which waits for release()).
    this.settling = this.ledger.post(this, quote, request).then(
      (settlement) => {
        this.state = "posted";
        this.posted = settlement;
        return settlement;
      },
      (error) => {
        this.state = "open";
        this.failed = { quote, request };
        throw error;
      },
    );
    this.settlePromise = this.settling.catch(async (error) => {
      // Not charged: the hold is released at once, and the caller is told "not billed" only when
      // the void is written (a store that cannot write cannot void either; the void is retried).
      const voided = await this.release();
      // Nothing was pending: the charge had been written and only its answer was lost.
      if (this.posted) return this.posted;
      throw error instanceof DomainError && error.kind === "unavailable" ? chargeNotRecorded(voided) : error;
    });
    return this.settlePromise;
  }

  /**
   * Voids the hold unless it was posted. Resolves true when the hold is known voided (a client may
   * be told it was not billed), false when it was posted or the void is still queued because the
   * store cannot write (it is retried until it can). Idempotent; never rejects.
   */
  release(): Promise<boolean> {
    // Posted: nothing to void (the usual end of a request), so no async step either.
    this.releasing ??= this.state === "posted" ? POSTED : this.releaseOnce();
    return this.releasing;
  }

  private async releaseOnce(): Promise<boolean> {
    if (this.settling) {
      try {
        await this.settling;
      } catch {
        // The charge was not written: the hold is open again and is voided below.
      }
    }
    if (this.state === "posted") return false;
    if (this.state === "released") return true;
    const outcome = await this.ledger.void(this);
    if (outcome === "absent" && this.failed) {
      const found = await this.ledger.recover(this, this.failed.quote, this.failed.request);
      if (found) {
        this.state = "posted";
        this.posted = found;
      }
      // Charged, or nothing pending with no charge found: either way never "not billed".
      return false;
    }
    return outcome === "voided";
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}

/** Cache reads and writes are parts of the prompt: `to` records at most its prompt of them (reads first). */
function cacheWithinPrompt(to: Consumption, from: Consumption): void {
  if (from.cachedTokens !== undefined) to.cachedTokens = Math.min(from.cachedTokens, to.inputTokens ?? 0);
  if (from.cacheWriteTokens !== undefined) to.cacheWriteTokens = Math.min(from.cacheWriteTokens, (to.inputTokens ?? 0) - (to.cachedTokens ?? 0));
}

function pick(u: Consumption): Consumption {
  const c: Consumption = {};
  if (u.inputTokens !== undefined) c.inputTokens = u.inputTokens;
  if (u.outputTokens !== undefined) c.outputTokens = u.outputTokens;
  cacheWithinPrompt(c, u);
  if (u.reasoningTokens !== undefined) c.reasoningTokens = u.reasoningTokens;
  if (u.characters !== undefined) c.characters = u.characters;
  return c;
}
