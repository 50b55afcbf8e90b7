/**
 * Who is calling: the API key (Bearer, or x-api-key on /v1/messages*) resolved to its account.
 * Missing → 401 missing_api_key; unknown or revoked → 401 invalid_api_key; disabled → 403.
 */
import { timingSafeEqual, createHash } from "node:crypto";
import type { Services } from "../services";
import { DomainError } from "../errors";
import { admitRequest, attachRateHeaders } from "./limits-hook";
import type { AccountLimits } from "../limits/limiter";

export interface Caller {
  accountId: string;
  keyId: string;
  /** The account's limits, resolved from the cached key owner (no account read per request). */
  limits: AccountLimits;
}

export function presentedKey(request: Request, bearer: string | undefined): string | null {
  if (bearer) return bearer;
  const url = request.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  if (path.startsWith("/v1/messages")) {
    const k = request.headers.get("x-api-key");
    if (k) return k.trim();
  }
  return null;
}

/**
 * Authenticates the caller of a model endpoint AND admits the request against the account's
 * rate and concurrency limits (429 when over), setting the x-ratelimit-* headers on `set`.
 * The concurrency slot is released by the request lifecycle when the response (stream included)
 * ends, on every path. Every model endpoint calls this once, first.
 */
export function authenticate(s: Services, request: Request, bearer: string | undefined, set: { headers: Record<string, unknown> }): Caller {
  const caller = callerOf(s, request, bearer);
  admitRequest(s, request, set, caller.accountId, caller.limits);
  return caller;
}

/**
 * Who is calling, for authenticated endpoints that do no model work (usage, count_tokens, stored
 * responses): the rate headers are reported, but no rate is consumed and no slot taken.
 */
export function identify(s: Services, request: Request, bearer: string | undefined, set: { headers: Record<string, unknown> }): Caller {
  const caller = callerOf(s, request, bearer);
  attachRateHeaders(s, set, caller.accountId, caller.limits);
  return caller;
}

function callerOf(s: Services, request: Request, bearer: string | undefined): Caller {
  const key = presentedKey(request, bearer);
  if (!key) {
    throw new DomainError("authentication", "missing_api_key", "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.");
  }
  const owner = s.keys.authenticate(key);
  if (!owner) throw new DomainError("authentication", "invalid_api_key", "Incorrect API key provided. Keys are shown once at creation; create a new one if it is lost.");
  if (owner.disabled) throw new DomainError("permission", "account_disabled", "This account is disabled. Contact the operator of this service.");
  return {
    accountId: owner.accountId,
    keyId: owner.keyId,
    limits: {
      rateLimitRpm: owner.rateLimitRpm ?? s.config.rateLimitRpm,
      concurrencyLimit: owner.concurrencyLimit ?? s.config.concurrencyLimit,
    },
  };
}

const digest = (v: string) => createHash("sha256").update(v).digest();

/** Admin token check, in constant time (hashing first makes the lengths equal). */
export function authenticateAdmin(s: Services, bearer: string | undefined): void {
  if (!s.config.adminToken) throw new DomainError("not_found", "not_found", "The admin API is off: set SWITCHYARD_ADMIN_TOKEN to enable it.");
  if (!bearer) throw new DomainError("authentication", "missing_api_key", "The admin API needs 'Authorization: Bearer <SWITCHYARD_ADMIN_TOKEN>'.");
  if (!timingSafeEqual(digest(bearer), digest(s.config.adminToken))) {
    throw new DomainError("authentication", "invalid_api_key", "Incorrect admin token.");
  }
}
