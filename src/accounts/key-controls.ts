/**
 * A key's own controls as the admin API and CLI take and show them, in OpenRouter's key fields
 * (docs/operate.md, "Keys: limits, expiry, models"): `limit` in USD (null: none), `limit_reset` daily |
 * weekly | monthly (null: never), `expires_at` ISO 8601 (null: never), plus `models` (public ids
 * or aliases the key may use; null: all) and `rate_limit_rpm` (the key's own rate; null: only the
 * account's). Enforcement: the hold (billing/ledger.ts), authentication (http/auth.ts) and
 * allowedModel() below.
 */
import { Type } from "@sinclair/typebox";
import type { ApiKeyListing, KeyControls, KeyOwner, KeyPatch } from "./api-keys";
import { LIMIT_MAXIMUM } from "./accounts";
import { formatUsd, MAX_BALANCE, MoneyFormatError, parseUsd, usdNumber } from "../billing/money";
import { LIMIT_RESETS, type LimitReset, nextReset, periodStarts, spentInPeriod } from "../billing/key-periods";
import { DomainError, invalidField } from "../errors";
import { resolveId, type ModelIds } from "../catalog/resolve";
import type { ResolvedModel } from "../catalog/catalog";

const usd = Type.Union([Type.Number(), Type.String(), Type.Null()], { description: "a USD amount (number or decimal string), or null for no limit" });
const reset = Type.Union([Type.Literal("daily"), Type.Literal("weekly"), Type.Literal("monthly"), Type.Null()]);
const expires = Type.Union([Type.String(), Type.Null()], { description: "an ISO 8601 date-time, or null" });
const models = Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 200 }), Type.Null()], {
  description: "an array of model ids or aliases, or null for all",
});
const rpm = Type.Union([Type.Integer(), Type.Null()], { description: "a whole number of at least 1, or null" });

const controlFields = {
  limit: Type.Optional(usd),
  limit_reset: Type.Optional(reset),
  expires_at: Type.Optional(expires),
  models: Type.Optional(models),
  rate_limit_rpm: Type.Optional(rpm),
};

export const CreateKeyBody = Type.Object({ name: Type.Optional(Type.String({ maxLength: 200 })), ...controlFields }, { additionalProperties: false });
export const PatchKeyBody = Type.Object({ name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])), ...controlFields }, {
  additionalProperties: false,
});

type ControlInput = { limit?: number | string | null; limit_reset?: LimitReset | null; expires_at?: string | null; models?: string[] | null; rate_limit_rpm?: number | null };

/** ISO 8601 date-time with a zone ("2026-12-31T23:59:59Z", "+02:00"), or a date (midnight UTC). */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;

/**
 * The controls a body names, validated, in stored form (units, Unix seconds); fields left out stay
 * undefined. An expiry in the past is accepted: the key is refused from then on (401 key_expired).
 */
export function parseControls(s: ModelIds, b: ControlInput): Partial<KeyControls> {
  const out: Partial<KeyControls> = {};
  if (b.limit !== undefined) out.spend_limit = b.limit === null ? null : limitUnits(b.limit);
  if (b.limit_reset !== undefined) out.limit_reset = b.limit_reset;
  if (b.expires_at !== undefined) {
    if (b.expires_at === null) out.expires_at = null;
    else {
      const ms = ISO_8601.test(b.expires_at) ? Date.parse(b.expires_at) : NaN;
      if (!Number.isFinite(ms)) throw invalidField("expires_at", "must be an ISO 8601 date-time with a time zone (\"2026-12-31T23:59:59Z\"), or null");
      out.expires_at = Math.floor(ms / 1000);
    }
  }
  if (b.models !== undefined) {
    if (b.models !== null) {
      b.models.forEach((m, i) => {
        if (!resolveId(s, m)) throw invalidField(`models[${i}]`, `'${m}' is not a model id or alias of this service (GET /v1/models lists them)`);
      });
      out.models = [...new Set(b.models)];
    } else out.models = null;
  }
  if (b.rate_limit_rpm !== undefined) {
    const v = b.rate_limit_rpm;
    const max = LIMIT_MAXIMUM.rate_limit_rpm;
    if (v !== null && (!Number.isInteger(v) || v < 1 || v > max)) throw invalidField("rate_limit_rpm", `must be a whole number from 1 to ${max}, or null for none`);
    out.rate_limit_rpm = v;
  }
  return out;
}

function limitUnits(value: number | string): number {
  let units: number;
  try {
    units = parseUsd(value);
  } catch (e) {
    if (e instanceof MoneyFormatError) throw invalidField("limit", e.message);
    throw e;
  }
  if (units < 0) throw invalidField("limit", "must not be negative");
  if (units > MAX_BALANCE) throw invalidField("limit", `must be at most ${formatUsd(MAX_BALANCE)} USD`);
  return units;
}

/** A patch of a key's name and controls. */
export function parsePatch(s: ModelIds, b: ControlInput & { name?: string | null }): KeyPatch {
  const patch: KeyPatch = parseControls(s, b);
  if (b.name !== undefined) patch.name = b.name;
  return patch;
}

/**
 * What the key's limit has left now for new holds (units): the limit less this period's spend and
 * what is held — counted exactly as a hold is checked (billing/key-periods.ts, spentInPeriod).
 */
export function limitRemaining(k: ApiKeyListing, nowMs = Date.now()): number | null {
  if (k.spend_limit === null) return null;
  return Math.max(0, k.spend_limit - spentInPeriod(k, periodStarts(nowMs)) - k.reserved);
}

/** This period's spend as the limit counts it (0 once the current period is newer than the stored one). */
export function spentThisPeriod(k: ApiKeyListing, nowMs = Date.now()): number {
  return spentInPeriod(k, periodStarts(nowMs));
}

/** The key's controls and figures in OpenRouter's field names (money in USD numbers). */
export function keyControlsView(k: ApiKeyListing, nowMs = Date.now()) {
  const remaining = limitRemaining(k, nowMs);
  const resets = k.spend_limit === null ? null : nextReset(k.limit_reset, nowMs);
  return {
    limit: k.spend_limit === null ? null : usdNumber(k.spend_limit),
    limit_remaining: remaining === null ? null : usdNumber(remaining),
    limit_reset: k.limit_reset,
    limit_resets_at: resets === null ? null : new Date(resets * 1000).toISOString(),
    usage: usdNumber(k.spent),
    expires_at: k.expires_at === null ? null : new Date(k.expires_at * 1000).toISOString(),
    expired: k.expires_at !== null && k.expires_at * 1000 <= nowMs,
    models: k.models,
    rate_limit_rpm: k.rate_limit_rpm,
  };
}

/**
 * 403 model_not_allowed unless the key may use this model: the id as requested, or the public id
 * it resolves to, is one of the key's models (or resolves to the same as one of them). The
 * message names only the key's own models.
 */
export function assertModelAllowed(s: ModelIds, allowed: readonly string[] | null, requested: string, resolved: ResolvedModel): void {
  if (allowed === null) return;
  for (const m of allowed) {
    if (m === requested || m === resolved.requestedId) return;
    const target = resolveId(s, m);
    if (target && target.requestedId === resolved.requestedId) return;
  }
  throw new DomainError(
    "permission",
    "model_not_allowed",
    `This key may not use the model '${requested}'. It may use: ${allowed.join(", ")}.`,
    "model",
  );
}

/** A key's controls as the API names them; a key with none of them is its account's owner key. */
export type KeyControlName = "limit" | "expires_at" | "models" | "rate_limit_rpm";

const CONTROL_WORDS: Record<KeyControlName, string> = {
  limit: "a spend limit",
  expires_at: "an expiry",
  models: "a model list",
  rate_limit_rpm: "a rate limit",
};

/** The controls this key carries, in the API's order ([] for a key without any). */
export function controlsOf(key: KeyOwner["key"]): KeyControlName[] {
  const out: KeyControlName[] = [];
  if (key.spendLimit !== null) out.push("limit");
  if (key.expiresAt !== null) out.push("expires_at");
  if (key.models !== null) out.push("models");
  if (key.rateLimitRpm !== null) out.push("rate_limit_rpm");
  return out;
}

/**
 * Whether a key may manage its account's keys (create, revoke) in the dashboard: only a key with
 * no control at all. A key with a limit, an expiry, a model list or a rate limit is an inference
 * key: it could otherwise mint a key without its limits (docs/operate.md, "The dashboard").
 */
export function managesKeys(key: KeyOwner["key"]): boolean {
  return controlsOf(key).length === 0;
}

/** "a spend limit, a model list and a rate limit": the controls in words. */
export function controlsInWords(names: readonly KeyControlName[]): string {
  const words = names.map((n) => CONTROL_WORDS[n]);
  return words.length <= 1 ? (words[0] ?? "no controls") : `${words.slice(0, -1).join(", ")} and ${words[words.length - 1]}`;
}

/** When the key expired (ms), or null while it is live (no expiry, or one still ahead). */
export function expiredAt(key: KeyOwner["key"], nowMs = Date.now()): number | null {
  const at = key.expiresAt;
  return at !== null && at * 1000 <= nowMs ? at * 1000 : null;
}

/** 401 key_expired for a key past its expiry (the same answer everywhere a key is presented). */
export function keyExpired(expiredAtMs: number, param: string | null = null): DomainError {
  return new DomainError("authentication", "key_expired", `This API key expired at ${new Date(expiredAtMs).toISOString()}. Ask for a new key.`, param);
}

/** A key that cannot be used now — its account disabled, or past its expiry — is refused, the same everywhere it is presented. */
export function refuseUnusableKey(owner: KeyOwner, param: string | null = null): void {
  if (owner.disabled) throw new DomainError("permission", "account_disabled", "This account is disabled. Contact the operator of this service.");
  const expired = expiredAt(owner.key);
  if (expired !== null) throw keyExpired(expired, param);
}

/**
 * The public ids a key's model list lets it call (each entry as written, and the id it resolves
 * to), for the dashboard's playground to offer; null when the key may use every model.
 */
export function allowedModelIds(s: ModelIds, models: readonly string[] | null): string[] | null {
  if (models === null) return null;
  const ids = new Set<string>();
  for (const m of models) {
    ids.add(m);
    const target = resolveId(s, m);
    if (target) ids.add(target.requestedId);
  }
  return [...ids].sort();
}

export { LIMIT_RESETS };
