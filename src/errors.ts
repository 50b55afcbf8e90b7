/**
 * Domain errors: what went wrong, in the service's own words, with no HTTP in them. Code below
 * src/http (billing, chat, upstream, protocols, engines, accounts) raises these; src/http/errors.ts
 * alone turns a kind into a status and one of the two error shapes. Anything thrown that is not a
 * DomainError is a bug and reaches clients only as a generic 500 carrying the request id, so no
 * internal text (SQL, stack traces, upstream words) can leak through an error path.
 */

/** What kind of failure, as a client should understand it. The HTTP layer maps each to a status. */
export type ErrorKind =
  /** The request is malformed or breaks a rule (names the field). */
  | "invalid_request"
  /** No credentials, or unknown ones. */
  | "authentication"
  /** The available balance cannot cover the hold. */
  | "insufficient_credits"
  /** Known caller, not allowed (disabled account). */
  | "permission"
  | "not_found"
  | "method_not_allowed"
  | "too_large"
  /** A rate, concurrency or sign-in throttle refused the request. */
  | "rate_limited"
  /** The client went away before an answer existed. */
  | "client_gone"
  /** An upstream failed or answered nonsense; nothing was billed. */
  | "upstream_failed"
  | "upstream_timeout"
  /** A model or the service itself cannot take work right now (capacity, storage); retry later. */
  | "unavailable"
  /** A model this server serves lacks its files: only the operator can fix it; retrying does not help. */
  | "not_installed"
  /** A bug or an unexpected failure; the message is generic. */
  | "internal";

export class DomainError extends Error {
  /** Further fields of the OpenAI-shaped error object (e.g. `suggestions` on model_not_found). */
  extra: Record<string, unknown> | null = null;
  constructor(
    readonly kind: ErrorKind,
    /** Stable machine-readable code ("invalid_value", "insufficient_credits", ...). */
    readonly code: string,
    message: string,
    /** The request field at fault, named as clients write it ("messages[0].role"). */
    readonly param: string | null = null,
    /** Seconds a client should wait before retrying (rate limits, capacity, storage). */
    readonly retryAfterSeconds: number | null = null,
    /** Extra response metadata (rate-limit figures, allowed methods), written out by src/http. */
    readonly details: Record<string, string> = {},
  ) {
    super(message);
  }
}

// Constructors for the errors clients see most, so codes and wording stay consistent.

export const badRequest = (param: string | null, message: string, code = "invalid_request_error") =>
  new DomainError("invalid_request", code, message, param);

export const invalidField = (param: string, rule: string) =>
  new DomainError("invalid_request", "invalid_value", `Invalid '${param}': ${rule}.`, param);

export const missingField = (param: string) =>
  new DomainError("invalid_request", "missing_required_parameter", `Missing required parameter: '${param}'.`, param);

/** 404 for an unknown id; `suggestions` (live public ids close to it) go in the message and the body. */
export function modelNotFound(model: string, suggestions: readonly string[] = []): DomainError {
  const hint = suggestions.length === 0 ? "" : ` Did you mean ${suggestions.map((id) => `'${id}'`).join(" or ")}?`;
  const err = new DomainError("not_found", "model_not_found", `The model '${model}' does not exist.${hint} GET /v1/models lists the available models.`, "model");
  if (suggestions.length > 0) err.extra = { suggestions: [...suggestions] };
  return err;
}

export const modelUnavailable = (model: string) =>
  new DomainError("unavailable", "model_unavailable", `The model '${model}' is not available right now. Try again later.`, "model", 5);

/**
 * A local model whose weight files are not on this server: 503 without Retry-After, naming the
 * missing files (relative to the model's folder, never the server's paths) and the command that
 * fetches them. `x-should-retry: false` tells the OpenAI and Anthropic SDKs not to retry.
 */
export const modelNotInstalled = (model: string, engineId: string, missing: readonly string[]) =>
  new DomainError(
    "not_installed",
    "model_not_installed",
    `The model '${model}' is not installed on this server: its files are missing (${missing.map((f) => `${engineId}/${f}`).join(", ")}). ` +
      `The operator can fetch them with \`switchyard models pull ${engineId}\`; the model goes live without a restart. Retrying will not help until then.`,
    "model",
    null,
    { "x-should-retry": "false" },
  );

export const wrongEndpoint = (model: string, endpoint: string) =>
  new DomainError("invalid_request", "wrong_endpoint", `The model '${model}' is not supported on this endpoint; it belongs to ${endpoint}.`, "model");

export const insufficientCredits = (neededUsd: string, availableUsd: string) =>
  new DomainError(
    "insufficient_credits",
    "insufficient_credits",
    `Insufficient credits: this request needs up to ${neededUsd} USD to be reserved, but the available balance is ${availableUsd} USD.`,
  );

/** A key's own spend limit (not the account's balance) cannot cover the hold: 402, as OpenRouter answers. */
export const keyLimitExceeded = (neededUsd: string, limitUsd: string, remainingUsd: string, reset: string | null, resetsAt: number | null) =>
  new DomainError(
    "insufficient_credits",
    "key_limit_exceeded",
    `This key's spend limit is ${limitUsd} USD` + (reset ? ` (${reset})` : "") + `; it has ${remainingUsd} USD left` +
      (resetsAt === null ? ", and the limit never resets" : `, and resets at ${new Date(resetsAt * 1000).toISOString()}`) +
      `. This request needs up to ${neededUsd} USD to be reserved.`,
  );

export const notFound = (message: string) => new DomainError("not_found", "not_found", message);

export const upstreamError = () =>
  new DomainError("upstream_failed", "upstream_error", "The model backend returned an error. The request was not billed; please retry.");

export const upstreamTimeout = () =>
  new DomainError("upstream_timeout", "upstream_timeout", "The model backend did not answer in time. The request was not billed; please retry.");

export const clientGone = (message = "The client closed the request.") => new DomainError("client_gone", "client_closed_request", message);

/**
 * The ledger cannot write (disk full, database locked or unreachable): the request is refused
 * before any work, with a generic message — never the storage error's own text.
 */
export const serviceUnavailable = (retryAfterSeconds = 2) =>
  new DomainError(
    "unavailable",
    "service_unavailable",
    "The service cannot take requests right now. Nothing was billed; please retry shortly.",
    null,
    retryAfterSeconds,
  );

/**
 * The work was done but its charge could not be written (the store stopped writing meanwhile).
 * "Not billed" is said only when the hold is known voided; otherwise the message stays neutral.
 */
export const chargeNotRecorded = (holdVoided: boolean) =>
  new DomainError(
    "unavailable",
    "service_unavailable",
    holdVoided
      ? "The service could not record this request's charge, so it was not billed. Please retry shortly."
      : "The service could not complete this request. Please retry shortly.",
    null,
    2,
  );

/** An upstream broke a stream after it started; "not billed" only when the hold is known voided. */
export const midStreamFailure = (holdVoided: boolean) =>
  new DomainError(
    "upstream_failed",
    "upstream_error",
    holdVoided ? "The model backend failed mid-stream. This request was not billed." : "The model backend failed mid-stream.",
  );

/** An account has too much text queued for token counting (see src/tokens/queue.ts). */
export const tokenQueueFull = (cap: number) =>
  new DomainError(
    "rate_limited",
    "token_queue_full",
    `Too much of this account's text is waiting to be counted: at most ${cap} characters may be queued for token counting per account. Retry once earlier requests have finished.`,
    null,
    1,
  );

/** An account's count_tokens requests in flight already carry the most bytes allowed. */
export const countTokensBytesExceeded = (cap: number, bytes: number) =>
  new DomainError(
    "rate_limited",
    "count_tokens_limit_exceeded",
    `count_tokens is limited to ${cap} bytes of text in flight per account; this request's ${bytes} bytes would pass that limit. Retry once earlier count_tokens requests have finished.`,
    null,
    1,
  );

/** An account has as many jobs waiting for a local model as one account may queue. */
export const engineQueueFullForAccount = (model: string, cap: number) =>
  new DomainError(
    "rate_limited",
    "model_queue_limit_exceeded",
    `This account already has ${cap} jobs waiting for the model '${model}', the most one account may queue. Retry once earlier requests have finished.`,
    "model",
    1,
  );

/** A domain invariant was broken; clients learn only that something failed, logs get the detail. */
export class InternalError extends DomainError {
  constructor(readonly detail: string) {
    super("internal", "internal_error", "The server had an error while processing your request.");
  }
}
