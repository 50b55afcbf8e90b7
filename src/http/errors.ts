/**
 * The one place that turns errors into HTTP: a domain error's kind decides the status, and the
 * path decides the shape — OpenAI's `{"error":{message,type,param,code}}` everywhere, Anthropic's
 * `{"type":"error","error":{type,message}}` on /v1/messages*. A store that cannot answer is 503;
 * anything else that is not a DomainError becomes a generic 500 that carries the request id and
 * no internal text.
 */
import { DomainError, serviceUnavailable, type ErrorKind } from "../errors";
import { StoreUnavailable } from "../billing/ledger-store";

const STATUS: Record<ErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  insufficient_credits: 402,
  permission: 403,
  not_found: 404,
  method_not_allowed: 405,
  too_large: 413,
  rate_limited: 429,
  client_gone: 499,
  internal: 500,
  upstream_failed: 502,
  unavailable: 503,
  not_installed: 503,
  upstream_timeout: 504,
};

export function statusOf(err: DomainError): number {
  return STATUS[err.kind];
}

/** OpenAI's error `type` for a status. */
function openAiTypeFor(status: number): string {
  switch (status) {
    case 400: case 405: case 413: case 422: return "invalid_request_error";
    case 401: return "authentication_error";
    case 402: return "insufficient_quota";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    case 504: return "timeout_error";
    default: return "api_error";
  }
}

/** Anthropic's error `type` values differ from OpenAI's for a few statuses. */
function anthropicTypeFor(status: number): string {
  switch (status) {
    case 400: case 405: case 422: return "invalid_request_error";
    case 413: return "request_too_large";
    case 401: return "authentication_error";
    case 402: return "billing_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: case 529: return "overloaded_error";
    case 504: return "timeout_error";
    default: return "api_error";
  }
}

export type ErrorDialect = "openai" | "anthropic";

export function dialectForPath(pathname: string): ErrorDialect {
  return pathname.startsWith("/v1/messages") ? "anthropic" : "openai";
}

/** Response headers an error carries: Retry-After and whatever details it names (rate figures, Allow). */
export function errorHeaders(err: DomainError): Record<string, string> {
  const h: Record<string, string> = { ...err.details };
  if (err.retryAfterSeconds !== null) h["retry-after"] = String(err.retryAfterSeconds);
  return h;
}

export function errorBody(err: DomainError, dialect: ErrorDialect): unknown {
  const status = statusOf(err);
  // A model without its files is not overloaded: "api_error" does not invite a retry.
  const notInstalled = err.kind === "not_installed";
  if (dialect === "anthropic") return { type: "error", error: { type: notInstalled ? "api_error" : anthropicTypeFor(status), message: err.message } };
  const body: Record<string, unknown> = { message: err.message, type: notInstalled ? "api_error" : openAiTypeFor(status), param: err.param, code: err.code };
  if (err.extra) Object.assign(body, err.extra);
  return { error: body };
}

/** The generic 500 a client gets for anything unexpected: the request id lets the operator find the log line. */
export function unexpectedError(requestId: string): DomainError {
  return new DomainError("internal", "internal_error", `The server had an error while processing your request (request id ${requestId}).`);
}

/** A domain error as clients see it; an unexpected error of any other kind is hidden behind a generic 500. */
export function publicError(error: unknown, requestId: string): DomainError {
  if (error instanceof DomainError && error.kind !== "internal") return error;
  // A store that cannot answer is the service being unavailable, wherever it surfaced.
  if (error instanceof StoreUnavailable) return serviceUnavailable();
  return unexpectedError(requestId);
}
