/**
 * Admission of an authenticated request against its account's limits (contract §8). Called from
 * authenticate(), so every model endpoint shares one counter per account. The slot it takes is
 * attached to the request context and released by the request lifecycle when the response —
 * stream included — has finished, or failed, on any path.
 */
import type { Services } from "../services";
import type { AccountLimits } from "../limits/limiter";
import { rateHeaders, retryAfterSeconds } from "../limits/limiter";
import { DomainError } from "../errors";
import { contextOf } from "./request-context";

type HeaderBag = { headers: Record<string, unknown> };

/**
 * Takes a slot and one unit of rate, or throws 429 naming the limit; sets the rate headers either way.
 * `limits` come from the caller's cached key owner, so admission reads nothing.
 */
export function admitRequest(s: Services, request: Request, set: HeaderBag, accountId: string, limits: AccountLimits): void {
  const admission = s.limits.admit(accountId, limits);
  const headers = rateHeaders(admission.rate);
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
  if (!ctx || ctx.finished) return admission.slot.release();
  ctx.accountId = accountId;
  ctx.slot?.release();
  ctx.slot = admission.slot;
}

/** For authenticated endpoints that do no model work (usage): report the rate without consuming it. */
export function attachRateHeaders(s: Services, set: HeaderBag, accountId: string, limits: AccountLimits): void {
  Object.assign(set.headers, rateHeaders(s.limits.peek(accountId, limits)));
}
