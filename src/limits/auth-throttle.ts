/**
 * Throttling of wrong credentials per source address: the admin token on /admin/* and the key or
 * token presented at dashboard sign-in. Guessing is slowed without locking out anyone else: the
 * source is the client's own address, also behind proxies listed in SWITCHYARD_TRUSTED_PROXIES
 * (docs/configuration.md "Exposure"; http/client-address.ts).
 *
 * Each source has a bucket of `burst` failures that refills one failure every `refillMs` (a token
 * bucket kept as one "theoretical time", like the request limiter). A wrong credential spends one;
 * while the bucket is empty every attempt from that source is refused before the credential is
 * even checked, so a correct guess cannot be confirmed during the lock-out either. A success does
 * not refill the bucket: otherwise anyone holding one valid key could reset it between guesses.
 *
 * In memory and bounded: at most `maxSources` sources are tracked; past that, sources whose
 * bucket is full again are dropped first, then the oldest.
 */

export interface AuthThrottleOptions {
  /** Wrong attempts allowed in a burst. */
  burst: number;
  /** One more wrong attempt is allowed per this many ms. */
  refillMs: number;
  /** Sources tracked at most. */
  maxSources: number;
}

export const DEFAULT_AUTH_THROTTLE: AuthThrottleOptions = { burst: 5, refillMs: 12_000, maxSources: 10_000 };

export type ThrottleCheck = { ok: true } | { ok: false; retryAfterMs: number };

export class AuthThrottle {
  /** Per source: when its bucket will be full again (ms); absent = full. */
  private readonly fullAt = new Map<string, number>();

  constructor(
    private readonly options: AuthThrottleOptions = DEFAULT_AUTH_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether `source` may present a credential now; call before checking it. */
  check(source: string): ThrottleCheck {
    const full = this.fullAt.get(source);
    if (full === undefined) return { ok: true };
    const now = this.now();
    if (full <= now) {
      this.fullAt.delete(source);
      return { ok: true };
    }
    // Spent failures = ceil((full - now) / refill); the bucket is empty when all `burst` are spent.
    const window = this.options.burst * this.options.refillMs;
    const excess = full - now - (window - this.options.refillMs);
    return excess > 0 ? { ok: false, retryAfterMs: excess } : { ok: true };
  }

  /** Records a wrong credential from `source`. */
  failure(source: string): void {
    const now = this.now();
    const full = Math.max(this.fullAt.get(source) ?? now, now) + this.options.refillMs;
    this.fullAt.delete(source); // re-inserted last, so map order stays oldest-first
    if (this.fullAt.size >= this.options.maxSources) this.evict(now);
    this.fullAt.set(source, full);
  }

  /** Sources currently tracked (tests, metrics). */
  get size(): number {
    return this.fullAt.size;
  }

  private evict(now: number): void {
    for (const [source, full] of this.fullAt) if (full <= now) this.fullAt.delete(source);
    while (this.fullAt.size >= this.options.maxSources) {
      const oldest = this.fullAt.keys().next().value as string;
      this.fullAt.delete(oldest);
    }
  }
}
