/**
 * A circuit breaker per route: after `failures` consecutive failures the route is open (skipped)
 * for `cooldownMs`; then it is half-open and lets exactly one request through as a probe. The
 * probe's success closes it, its failure opens it for another cool-down. Time is passed in, so
 * the state machine is testable without waiting.
 */
export type BreakerState = "closed" | "open" | "half-open";

export class RouteHealth {
  private consecutiveFailures = 0;
  private openedAt: number | null = null;
  private probing = false;

  constructor(private readonly policy: { failures: number; cooldownMs: number }) {}

  state(now = Date.now()): BreakerState {
    if (this.openedAt === null) return "closed";
    return now - this.openedAt >= this.policy.cooldownMs ? "half-open" : "open";
  }

  /** Failures since the last success (the operator view shows it beside the state). */
  get failures(): number {
    return this.consecutiveFailures;
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
    this.consecutiveFailures = 0;
    this.openedAt = null;
    this.probing = false;
  }

  failure(now = Date.now()): void {
    this.consecutiveFailures++;
    if (this.probing || this.consecutiveFailures >= this.policy.failures) this.openedAt = now;
    this.probing = false;
  }

  /** A request that ended without telling anything about the route's health (client left). */
  neutral(): void {
    this.probing = false;
  }
}
