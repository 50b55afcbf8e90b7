/**
 * A circuit breaker per route: after `failures` consecutive failures the route is open (skipped)
 * for `cooldownMs`; then it is half-open and lets exactly one request through as a probe. The
 * probe's success closes it, its failure opens it for another cool-down. Time is passed in, so
 * the state machine is testable without waiting.
 *
 * One tenant must not be able to take a route from everyone: an upstream's 5xx may be caused by
 * the request's own content (a prompt that crashes the engine), so such failures open the breaker
 * only when they come from at least MIN_ACCOUNTS distinct accounts in the run of failures.
 * Failures no request's content explains — no connection, a timeout, a stream that stalls or
 * breaks, 429 and the like — open it on their own. (docs/chat.md, "Chat routing".)
 */
export type BreakerState = "closed" | "open" | "half-open";

/** Distinct accounts whose 5xx answers it takes to open a breaker. */
export const MIN_ACCOUNTS = 2;

export interface FailureCause {
  /** The upstream answered 5xx: possibly caused by this request's content. */
  answer: boolean;
  /** The account whose request failed (null when unknown). */
  account: string | null;
}

const ROUTE_FAULT: FailureCause = { answer: false, account: null };

export interface BreakerPolicy {
  failures: number;
  cooldownMs: number;
  /**
   * Counts every change of what a breaker shows (its state, its failures), across the breakers
   * sharing this policy: a view of them all (/readyz) is rebuilt only when it moved.
   */
  changes?: { count: number };
}

export class RouteHealth {
  /** The failures since the last success (or since the breaker last opened)... */
  private run = 0;
  /** ...of which no request's content explains (no connection, timeouts, 429...)... */
  private routeFaults = 0;
  /** ...and the accounts whose requests got the others (5xx). */
  private readonly accounts = new Set<string>();
  /** Failures since the last success, whatever opened or not (what the operator view shows). */
  private consecutive = 0;
  private openedAt: number | null = null;
  private probing = false;

  constructor(private readonly policy: BreakerPolicy) {}

  state(now = Date.now()): BreakerState {
    if (this.openedAt === null) return "closed";
    return now - this.openedAt >= this.policy.cooldownMs ? "half-open" : "open";
  }

  /** When an open breaker turns half-open by itself (no event marks it); null when it is not open. */
  openUntil(now = Date.now()): number | null {
    return this.state(now) === "open" ? this.openedAt! + this.policy.cooldownMs : null;
  }

  /** Closed, with no failure to remember and no probe out: a new one would be the same. */
  pristine(): boolean {
    return this.openedAt === null && this.consecutive === 0 && this.run === 0 && !this.probing;
  }

  /** Failures since the last success (the operator view shows it beside the state). */
  get failures(): number {
    return this.consecutive;
  }

  /** Whether a request may be sent now; in half-open state only one probe at a time. */
  tryAcquire(now = Date.now()): boolean {
    const st = this.state(now);
    if (st === "closed") return true;
    if (st === "open" || this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Would `tryAcquire` succeed (without taking the probe slot)? */
  available(now = Date.now()): boolean {
    const st = this.state(now);
    return st === "closed" || (st === "half-open" && !this.probing);
  }

  success(): void {
    if (this.consecutive !== 0 || this.openedAt !== null) this.changed();
    this.consecutive = 0;
    this.forget();
    this.openedAt = null;
    this.probing = false;
  }

  /**
   * A failed request. Opens the breaker after `failures` in a row that are not down to one
   * account's content: route faults alone, or a run whose 5xx came from several accounts. A
   * failed probe re-opens it on the same terms.
   */
  failure(now = Date.now(), cause: FailureCause = ROUTE_FAULT): void {
    this.changed();
    this.consecutive++;
    this.run++;
    if (!cause.answer) this.routeFaults++;
    else if (cause.account !== null) this.accounts.add(cause.account);
    const wasProbe = this.probing;
    this.probing = false;
    const severalAccounts = this.accounts.size >= MIN_ACCOUNTS;
    const enough = this.routeFaults >= this.policy.failures || (this.run >= this.policy.failures && severalAccounts);
    const probeFailed = wasProbe && (!cause.answer || severalAccounts);
    if (enough || probeFailed) {
      this.openedAt = now;
      this.forget();
    }
  }

  /** A request that ended without telling anything about the route's health (client left). */
  neutral(): void {
    this.probing = false;
  }

  private changed(): void {
    if (this.policy.changes) this.policy.changes.count++;
  }

  private forget(): void {
    this.run = 0;
    this.routeFaults = 0;
    this.accounts.clear();
  }
}
