/**
 * Per-account request limits (docs/operate.md, "Limits, usage and metrics"): one in-flight counter and one request-rate meter per
 * account, shared by every model endpoint. In memory when one process serves an account (the
 * SQLite store); in PostgreSQL, behind the same interface, when several instances share it.
 *
 * Rate uses GCRA (a token bucket kept as one "theoretical arrival time"): `rpm` requests may come
 * in a burst, then one more every 60/rpm seconds. O(1) memory per account, no timestamp logs.
 * Concurrency is checked first, so a request refused for concurrency never consumes rate.
 */

export const WINDOW_MS = 60_000;

export interface AccountLimits {
  rateLimitRpm: number;
  concurrencyLimit: number;
}

/** What the x-ratelimit-*-requests headers report. */
export interface RateStatus {
  limit: number;
  remaining: number;
  /** Milliseconds until the bucket is full again. */
  resetMs: number;
}

export type Admission =
  | { ok: true; rate: RateStatus; slot: Slot }
  | { ok: false; reason: "rate" | "concurrency"; rate: RateStatus; retryAfterMs: number };

/** An admitted request's in-flight slot; release is idempotent so every exit path may call it. */
export interface Slot {
  release(): void;
  readonly released: boolean;
}

/**
 * What admits requests against their account's limits, whichever process keeps the counters:
 * AccountLimiter in memory (one process owns its accounts) or PostgreSQL (every instance shares
 * one counter and one bucket per account: src/store/postgres/limiter.ts). The in-memory one
 * answers synchronously, so the single-process hot path never waits a turn of the event loop; the
 * shared one returns promises (it asks the database) that reject with StoreUnavailable when it
 * cannot. A slot's release() never throws (the shared one writes it behind, retried).
 */
export interface Limiter {
  admit(accountId: string, limits: AccountLimits): Admission | Promise<Admission>;
  /** The rate status without consuming anything. */
  peek(accountId: string, limits: AccountLimits): RateStatus | Promise<RateStatus>;
  /** Requests holding a slot for the account (across every instance, for the shared one). */
  inFlight(accountId: string): number | Promise<number>;
  /** Requests of this process holding a slot, all accounts together (a metrics gauge). */
  totalInFlight(): number;
  /**
   * A key's own rate (docs/operate.md, "Keys: limits, expiry, models"): one unit of the key's bucket, the
   * same GCRA as an account's, rate only (concurrency stays the account's).
   */
  admitKey(keyId: string, rpm: number): KeyAdmission | Promise<KeyAdmission>;
  /** The key's rate status without consuming anything. */
  peekKey(keyId: string, rpm: number): RateStatus | Promise<RateStatus>;
}

export type KeyAdmission = { ok: true; rate: RateStatus } | { ok: false; rate: RateStatus; retryAfterMs: number };

/** The tighter of two rate statuses: the one with fewer requests left (the later reset on a tie). */
export function tighter(a: RateStatus, b: RateStatus): RateStatus {
  if (a.remaining !== b.remaining) return a.remaining < b.remaining ? a : b;
  return a.resetMs >= b.resetMs ? a : b;
}

/** GCRA for one bucket: the next theoretical arrival time, or null when the request must wait. */
export function nextArrival(tat: number, now: number, rpm: number): number | null {
  const next = Math.max(tat, now) + WINDOW_MS / rpm;
  return next - now > WINDOW_MS + 1e-6 ? null : next;
}

/** How long a refused request must wait, for a bucket at `tat`. */
export function retryAfterMsOf(tat: number, now: number, rpm: number): number {
  return Math.max(tat, now) + WINDOW_MS / rpm - now - WINDOW_MS;
}

interface State {
  /** Theoretical arrival time of the next request, in ms (GCRA). */
  tat: number;
  inFlight: number;
}

/** Key buckets kept before idle ones (theoretical arrival time passed) are dropped. */
const KEY_STATES_PRUNE_AT = 10_000;

export class AccountLimiter implements Limiter {
  private readonly states = new Map<string, State>();
  /** Theoretical arrival time per key with its own rate. */
  private readonly keyTats = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Admits one request or says why not; on success the caller must release the slot. */
  admit(accountId: string, limits: AccountLimits): Admission {
    const now = this.now();
    const state = this.state(accountId, now);
    const interval = WINDOW_MS / limits.rateLimitRpm;
    if (state.inFlight >= limits.concurrencyLimit) {
      return { ok: false, reason: "concurrency", rate: rateStatus(state.tat, now, limits.rateLimitRpm), retryAfterMs: 1000 };
    }
    const nextTat = Math.max(state.tat, now) + interval;
    // A small tolerance absorbs float error when 60000/rpm is not a whole number.
    if (nextTat - now > WINDOW_MS + 1e-6) {
      return { ok: false, reason: "rate", rate: rateStatus(state.tat, now, limits.rateLimitRpm), retryAfterMs: nextTat - now - WINDOW_MS };
    }
    state.tat = nextTat;
    state.inFlight++;
    return { ok: true, rate: rateStatus(state.tat, now, limits.rateLimitRpm), slot: this.slot(accountId, state) };
  }

  /** The rate status without consuming anything (for authenticated non-model endpoints). */
  peek(accountId: string, limits: AccountLimits): RateStatus {
    const now = this.now();
    return rateStatus(this.states.get(accountId)?.tat ?? now, now, limits.rateLimitRpm);
  }

  inFlight(accountId: string): number {
    return this.states.get(accountId)?.inFlight ?? 0;
  }

  admitKey(keyId: string, rpm: number): KeyAdmission {
    const now = this.now();
    const tat = this.keyTats.get(keyId) ?? now;
    const next = nextArrival(tat, now, rpm);
    if (next === null) return { ok: false, rate: rateStatus(tat, now, rpm), retryAfterMs: retryAfterMsOf(tat, now, rpm) };
    if (this.keyTats.size >= KEY_STATES_PRUNE_AT) for (const [k, t] of this.keyTats) if (t <= now) this.keyTats.delete(k);
    this.keyTats.set(keyId, next);
    return { ok: true, rate: rateStatus(next, now, rpm) };
  }

  peekKey(keyId: string, rpm: number): RateStatus {
    const now = this.now();
    return rateStatus(this.keyTats.get(keyId) ?? now, now, rpm);
  }

  /** Requests holding a slot, all accounts together (a metrics gauge). */
  totalInFlight(): number {
    let n = 0;
    for (const s of this.states.values()) n += s.inFlight;
    return n;
  }

  private state(accountId: string, now: number): State {
    let s = this.states.get(accountId);
    if (!s) this.states.set(accountId, (s = { tat: now, inFlight: 0 }));
    return s;
  }

  private slot(accountId: string, state: State): Slot {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        state.inFlight--;
        // Forget idle accounts so the map stays as small as the set of active callers.
        if (state.inFlight === 0 && state.tat <= this.now() && this.states.get(accountId) === state) this.states.delete(accountId);
      },
      get released() {
        return released;
      },
    };
  }
}

/** The rate figures for a bucket whose theoretical arrival time is `tat` at time `now` (ms). */
export function rateStatus(tat: number, now: number, rpm: number): RateStatus {
  const used = Math.max(0, tat - now);
  const interval = WINDOW_MS / rpm;
  return { limit: rpm, remaining: Math.max(0, Math.floor((WINDOW_MS - used) / interval + 1e-9)), resetMs: used };
}

/** A duration the way OpenAI writes x-ratelimit-reset-*: "0s", "120ms", "20s", "6m0s", "1m30.5s". */
export function durationText(ms: number): string {
  const whole = Math.ceil(ms);
  if (whole <= 0) return "0s";
  if (whole < 1000) return `${whole}ms`;
  const minutes = Math.floor(whole / 60_000);
  const seconds = (whole % 60_000) / 1000;
  const secText = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, "")}s`;
  return minutes > 0 ? `${minutes}m${secText}` : secText;
}

/** The headers every authenticated response carries. */
export function rateHeaders(r: RateStatus): Record<string, string> {
  return {
    "x-ratelimit-limit-requests": String(r.limit),
    "x-ratelimit-remaining-requests": String(r.remaining),
    "x-ratelimit-reset-requests": durationText(r.resetMs),
  };
}

/** Retry-After is whole seconds, at least 1. */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}
