/**
 * Admission of an authenticated request against its account's limits (docs/operate.md, "Limits, usage and metrics"). Called from
 * authenticate(), so every model endpoint shares one counter per account. The slot it takes is
 * attached to the request context and released by the request lifecycle when the response —
 * stream included — has finished, or failed, on any path.
 */
import type { AccountLimits, Admission, KeyAdmission, Limiter, RateStatus } from "../limits/limiter";
import type { MetricsRegistry } from "../metrics/registry";
import { rateHeaders, retryAfterSeconds, tighter } from "../limits/limiter";
import { DomainError, serviceUnavailable } from "../errors";
import { StoreUnavailable } from "../billing/ledger-store";
import { contextOf } from "./request-context";

type HeaderBag = { headers: Record<string, unknown> };

/** What admission uses: the limiter, and the counter of refusals. */
export interface AdmissionDeps {
  limits: Limiter;
  metrics: MetricsRegistry;
}

/**
 * Takes a slot and one unit of rate, or throws 429 naming the limit; sets the rate headers either way.
 * `limits` come from the caller's cached key owner, so admission reads nothing. Synchronous with
 * the in-memory limiter; a promise with the shared one (PostgreSQL), 503 when it cannot answer.
 */
export function admitRequest(
  s: AdmissionDeps, request: Request, set: HeaderBag, accountId: string, limits: AccountLimits, keyId?: string, keyRpm: number | null = null,
): void | Promise<void> {
  const ctx = contextOf(request);
  if (ctx) ctx.authenticatedAccount = accountId;
  // A key with its own rate is admitted on it first: a request it refuses takes nothing of the account's.
  if (keyId !== undefined && keyRpm !== null) {
    const k = s.limits.admitKey(keyId, keyRpm);
    if (k instanceof Promise) return k.then((ka) => admitAccount(s, request, set, accountId, limits, keyAdmitted(s, set, ka)), storeRefused);
    return admitAccount(s, request, set, accountId, limits, keyAdmitted(s, set, k));
  }
  return admitAccount(s, request, set, accountId, limits, null);
}

/** The key's rate status once admitted; 429 naming the key's limit (and its headers) when not. */
function keyAdmitted(s: AdmissionDeps, set: HeaderBag, k: KeyAdmission): RateStatus {
  if (k.ok) return k.rate;
  const headers = rateHeaders(k.rate);
  Object.assign(set.headers, headers);
  s.metrics.counter("switchyard_limit_rejections_total", "Requests refused by a per-account limit.").inc({ limit: "key_rate" });
  const retryAfter = retryAfterSeconds(k.retryAfterMs);
  throw new DomainError("rate_limited", "rate_limit_exceeded", `Rate limit reached: ${k.rate.limit} requests per minute for this key. Retry after ${retryAfter} s.`, null, Number(retryAfter), headers);
}

function admitAccount(s: AdmissionDeps, request: Request, set: HeaderBag, accountId: string, limits: AccountLimits, keyRate: RateStatus | null): void | Promise<void> {
  const admission = s.limits.admit(accountId, limits);
  if (admission instanceof Promise) return admission.then((a) => admit(s, request, set, accountId, limits, a, keyRate), storeRefused);
  admit(s, request, set, accountId, limits, admission, keyRate);
}

function admit(s: AdmissionDeps, request: Request, set: HeaderBag, accountId: string, limits: AccountLimits, admission: Admission, keyRate: RateStatus | null): void {
  // The headers report the tighter of the key's and the account's rate.
  const headers = rateHeaders(keyRate ? tighter(keyRate, admission.rate) : admission.rate);
  Object.assign(set.headers, headers);
  if (!admission.ok) {
    s.metrics.counter("switchyard_limit_rejections_total", "Requests refused by a per-account limit.").inc({ limit: admission.reason });
    const retryAfter = retryAfterSeconds(admission.retryAfterMs);
    if (admission.reason === "concurrency") {
      throw new DomainError("rate_limited", "concurrency_limit_exceeded", `Too many requests in flight for this account (limit ${limits.concurrencyLimit}). Wait for one to finish, then retry.`, null, Number(retryAfter), headers);
    }
    throw new DomainError("rate_limited", "rate_limit_exceeded", `Rate limit reached: ${admission.rate.limit} requests per minute for this account. Retry after ${retryAfter} s.`, null, Number(retryAfter), headers);
  }
  const ctx = contextOf(request);
  // Without a lifecycle context nothing could ever release the slot, so it is given back now
  // rather than leaked (the rate unit stays consumed); createApp always installs the lifecycle.
  // A client that left while a shared limiter was answering has finished too.
  if (!ctx || ctx.finished) return admission.slot.release();
  ctx.accountId = accountId;
  ctx.slot?.release();
  ctx.slot = admission.slot;
}

/** For authenticated endpoints that do no model work (usage): report the rate without consuming it. */
export async function attachRateHeaders(s: Pick<AdmissionDeps, "limits">, set: HeaderBag, accountId: string, limits: AccountLimits, keyId?: string, keyRpm: number | null = null): Promise<void> {
  const peeked = s.limits.peek(accountId, limits);
  let rate = peeked instanceof Promise ? await peeked.catch(storeRefused) : peeked;
  if (keyId !== undefined && keyRpm !== null) {
    const k = s.limits.peekKey(keyId, keyRpm);
    rate = tighter(rate, k instanceof Promise ? await k.catch(storeRefused) : k);
  }
  Object.assign(set.headers, rateHeaders(rate));
}

/** A store that cannot answer (the database is away) refuses the request with 503, before any work. */
export function storeRefused(e: unknown): never {
  if (e instanceof StoreUnavailable) throw serviceUnavailable();
  throw e;
}
