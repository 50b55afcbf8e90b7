/**
 * Who is calling: the API key (Bearer, or x-api-key) resolved to its account.
 * Missing → 401 missing_api_key; unknown or revoked → 401 invalid_api_key; expired → 401
 * key_expired; disabled → 403.
 */
import { timingSafeEqual, createHash } from "node:crypto";
import type { Config } from "../config";
import { DomainError } from "../errors";
import { admitRequest, attachRateHeaders, storeRefused, type AdmissionDeps } from "./limits-hook";
import type { AccountLimits } from "../limits/limiter";
import type { AuthThrottle } from "../limits/auth-throttle";
import type { ApiKeys, KeyOwner } from "../accounts/api-keys";
import { refuseUnusableKey } from "../accounts/key-controls";
import { contextOf } from "./request-context";
import { clientAddress } from "./client-address";
import type { Cidr } from "../net/ip";

export interface Caller {
  accountId: string;
  keyId: string;
  /** The account's limits, resolved from the cached key owner (no account read per request). */
  limits: AccountLimits;
  /** The key's own controls (docs/operate.md, "Keys: limits, expiry, models"). */
  key: KeyOwner["key"];
}

/** What finding a key's caller uses: the key cache and the default limits of accounts, and the limiter for the rate headers. */
export interface KeyIdentityDeps {
  keys: Pick<ApiKeys, "authenticate">;
  config: Pick<Config, "rateLimitRpm" | "concurrencyLimit">;
  limits: AdmissionDeps["limits"];
}

/** What authenticating and admitting a model request uses. */
export interface KeyAuthDeps extends KeyIdentityDeps, AdmissionDeps {}

/** What checking the admin token uses: the token, and the throttle of wrong ones per source. */
export interface AdminAuthDeps {
  config: Pick<Config, "adminToken">;
  authThrottle: AuthThrottle;
}

/**
 * The API key a request presents: a Bearer credential (the scheme in any case), or an
 * `x-api-key` header (Anthropic's clients send it; accepted on every endpoint). `bearer` is what
 * the app derived from the Authorization header.
 */
export function presentedKey(request: Request, bearer: string | undefined): string | null {
  const credential = bearer || bearerOf(request);
  if (credential) return credential;
  const k = request.headers.get("x-api-key")?.trim();
  return k ? k : null;
}

/** Headers other clients put keys in, which this server does not read (Azure's api-key, ...). */
const UNREAD_KEY_HEADERS = ["api-key", "apikey", "x-goog-api-key", "openai-api-key", "x-auth-token"] as const;

/** Schemes named back to the client; anything else may be the key itself and is never echoed. */
const KNOWN_SCHEMES = ["Bearer", "Basic", "Token", "Digest", "ApiKey", "Api-Key", "Key", "Negotiate", "OAuth"] as const;

const HOW = "Send it as 'Authorization: Bearer <key>' (or in the 'x-api-key' header).";

/**
 * The 401 for a request without a key this server reads. When the key seems to be somewhere
 * else (an Authorization header without the Bearer scheme, an Azure-style `api-key` header),
 * the message names where it was found and where it belongs; the value is never echoed.
 */
export function missingKeyError(request: Request): DomainError {
  const authorization = request.headers.get("authorization");
  let message = `You didn't provide an API key. ${HOW}`;
  if (authorization !== null) {
    const first = /^\s*(\S*)/.exec(authorization)![1]!;
    const scheme = KNOWN_SCHEMES.find((k) => k.toLowerCase() === first.toLowerCase());
    if (scheme === "Bearer") message = `The 'Authorization' header has the Bearer scheme but no key after it. ${HOW}`;
    else if (scheme) message = `The 'Authorization' header uses the '${scheme}' scheme, which this server does not accept: keys go as 'Authorization: Bearer <key>'.`;
    else message = `The 'Authorization' header holds a value without the 'Bearer ' scheme: send it as 'Authorization: Bearer <key>'.`;
  } else {
    const unread = UNREAD_KEY_HEADERS.find((h) => request.headers.has(h));
    if (unread) message = `The key was sent in the '${unread}' header${unread === "api-key" ? " (Azure style)" : ""}, which this server does not read. ${HOW}`;
  }
  return new DomainError("authentication", "missing_api_key", message);
}

/**
 * Authenticates the caller of a model endpoint AND admits the request against the account's
 * rate and concurrency limits (429 when over), setting the x-ratelimit-* headers on `set`.
 * The concurrency slot is released by the request lifecycle when the response (stream included)
 * ends, on every path. Every model endpoint calls this once, first.
 *
 * Synchronous when nothing has to wait (a cached key and the in-memory limiter: the SQLite
 * default); a promise when the store must be asked (PostgreSQL: a key not cached, the shared
 * limits). A store that cannot answer makes it 503 service_unavailable, before any upstream call.
 */
export function authenticate(s: KeyAuthDeps, request: Request, bearer: string | undefined, set: { headers: Record<string, unknown> }): Caller | Promise<Caller> {
  const ctx = contextOf(request);
  // Admitted already, before its body was read (admitBeforeBody): never twice.
  if (ctx?.caller) return ctx.caller;
  const found = callerOf(s, request, bearer);
  if (found instanceof Promise) return found.then((caller) => admitted(s, request, set, caller));
  return admitted(s, request, set, found);
}

function admitted(s: KeyAuthDeps, request: Request, set: { headers: Record<string, unknown> }, caller: Caller): Caller | Promise<Caller> {
  const remember = (): Caller => {
    const ctx = contextOf(request);
    if (ctx) ctx.caller = caller;
    return caller;
  };
  const admission = admitRequest(s, request, set, caller.accountId, caller.limits, caller.keyId, caller.key.rateLimitRpm);
  return admission instanceof Promise ? admission.then(remember) : remember();
}

/**
 * The POST endpoints whose caller is authenticated and admitted before the body is read, so a
 * client without a valid key, or over its limits, never makes the server read and parse a body
 * of up to SWITCHYARD_MAX_BODY_BYTES. Each of them calls authenticate() first.
 */
export const ADMITTED_BEFORE_BODY: ReadonlySet<string> = new Set([
  "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/v1/audio/speech", "/v1/embeddings",
]);

/**
 * Called by the app's body parser before it reads a body: 401/403/429 (and 503 when the store
 * cannot answer) come first, bodies unread. A promise when the store must be asked.
 */
export function admitBeforeBody(s: KeyAuthDeps, request: Request, path: string, set: { headers: Record<string, unknown> }): void | Promise<unknown> {
  if (request.method !== "POST" || !ADMITTED_BEFORE_BODY.has(path)) return;
  const admitted = authenticate(s, request, bearerOf(request), set);
  if (admitted instanceof Promise) return admitted;
}

const BEARER = /^bearer[ \t]+(\S.*)$/i;

/**
 * The bearer credential of a request: the Authorization header's Bearer scheme, matched in any
 * case, as HTTP authentication schemes are case-insensitive (RFC 9110 §11.1). Never the URL: see
 * refuseKeyInQuery. Usable before the body is parsed.
 */
export function bearerOf(request: Request): string | undefined {
  const authorization = request.headers.get("authorization");
  if (!authorization) return undefined;
  const m = BEARER.exec(authorization);
  return m ? m[1]!.trim() : undefined;
}

/** Query parameters that carry credentials elsewhere (OAuth's access_token, common api_key). */
const CREDENTIAL_PARAMS = ["access_token", "api_key"] as const;

/**
 * Keys and tokens are accepted only in headers (docs/configuration.md "Exposure"): URLs end up in proxy and
 * browser logs and histories. A request carrying one in its query string is refused with 401,
 * whatever its headers hold, so a client that leaks its key finds out on its first call. The
 * value is never echoed.
 */
export function refuseKeyInQuery(request: Request): void {
  const url = request.url;
  const q = url.indexOf("?");
  if (q < 0) return;
  const params = new URLSearchParams(url.slice(q + 1).split("#")[0]);
  for (const name of CREDENTIAL_PARAMS) {
    if (params.has(name)) {
      throw new DomainError("authentication", "credential_in_query", `Keys are not accepted in the URL (the '${name}' query parameter): URLs are written to proxy and browser logs. Send the key in the 'Authorization: Bearer <key>' header instead, and consider this key exposed.`, name);
    }
  }
}

/**
 * Who is calling, for authenticated endpoints that do no model work (usage, count_tokens, stored
 * responses): the rate headers are reported, but no rate is consumed and no slot taken.
 */
export async function identify(s: KeyIdentityDeps, request: Request, bearer: string | undefined, set: { headers: Record<string, unknown> }): Promise<Caller> {
  const found = callerOf(s, request, bearer);
  const caller = found instanceof Promise ? await found : found;
  await attachRateHeaders(s, set, caller.accountId, caller.limits, caller.keyId, caller.key.rateLimitRpm);
  return caller;
}

/** The key of a hold (billing/hold.ts): the caller's key, whose spend limit the hold must fit too. */
export function holdKey(caller: Caller): { id: string; limitReset: Caller["key"]["limitReset"] } {
  return { id: caller.keyId, limitReset: caller.key.limitReset };
}

function callerOf(s: KeyIdentityDeps, request: Request, bearer: string | undefined): Caller | Promise<Caller> {
  refuseKeyInQuery(request);
  const key = presentedKey(request, bearer);
  if (!key) throw missingKeyError(request);
  const owner = s.keys.authenticate(key);
  if (owner instanceof Promise) return owner.then((o) => callerFrom(s, o), storeRefused);
  return callerFrom(s, owner);
}

function callerFrom(s: KeyIdentityDeps, owner: KeyOwner | null): Caller {
  if (!owner) throw new DomainError("authentication", "invalid_api_key", "Incorrect API key provided. Keys are shown once at creation; create a new one if it is lost.");
  refuseUnusableKey(owner);
  return {
    accountId: owner.accountId,
    keyId: owner.keyId,
    limits: {
      rateLimitRpm: owner.rateLimitRpm ?? s.config.rateLimitRpm,
      concurrencyLimit: owner.concurrencyLimit ?? s.config.concurrencyLimit,
    },
    key: owner.key,
  };
}

const digest = (v: string) => createHash("sha256").update(v).digest();

/**
 * Admin token check, in constant time (hashing first makes the lengths equal). Wrong tokens are
 * throttled per source address (limits/auth-throttle.ts, shared with dashboard sign-in): past a
 * burst of 5, one more guess every 12 s, and while a source is throttled its attempts are refused
 * (429 with Retry-After) before the token is even compared.
 */
export function authenticateAdmin(s: AdminAuthDeps, request: Request, bearer: string | undefined, source: string): void {
  if (!s.config.adminToken) throw new DomainError("not_found", "not_found", "The admin API is off: set SWITCHYARD_ADMIN_TOKEN to enable it.");
  refuseKeyInQuery(request);
  const token = bearer || bearerOf(request);
  if (!token) throw new DomainError("authentication", "missing_api_key", "The admin API needs 'Authorization: Bearer <SWITCHYARD_ADMIN_TOKEN>'.");
  const gate = s.authThrottle.check(source);
  if (!gate.ok) throw tooManyFailures(gate.retryAfterMs, "admin tokens");
  if (!timingSafeEqual(digest(token), digest(s.config.adminToken))) {
    s.authThrottle.failure(source);
    throw new DomainError("authentication", "invalid_api_key", "Incorrect admin token.");
  }
}

/** 429 for a source whose wrong credentials are being throttled. */
export function tooManyFailures(retryAfterMs: number, what: string): DomainError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new DomainError("rate_limited", "too_many_failed_attempts", `Too many wrong ${what} from this address. Retry after ${seconds} s.`, null, seconds);
}

/**
 * The client's address (the key of per-source throttles): the connection's peer, or behind a
 * proxy in SWITCHYARD_TRUSTED_PROXIES the client that proxy reports in X-Forwarded-For.
 */
export function sourceAddress(app: { server: { requestIP(r: Request): { address: string } | null } | null }, request: Request, trusted: readonly Cidr[]): string {
  const peer = app.server?.requestIP(request)?.address ?? "unknown";
  return clientAddress(peer, request.headers.get("x-forwarded-for"), trusted);
}
