/**
 * The one place that decides error shapes (contract §6).
 * Code throws ApiError anywhere; the app's error hook renders it in the OpenAI shape,
 * or the Anthropic shape on /v1/messages*. Unknown errors become a 500 with no internals.
 */

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "insufficient_quota"
  | "not_found_error"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error"
  | "timeout_error";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get type(): ErrorType {
    return errorTypeFor(this.status);
  }
}

function errorTypeFor(status: number): ErrorType {
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
    case 400: case 405: case 413: case 422: return status === 413 ? "request_too_large" : "invalid_request_error";
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

export function errorBody(err: ApiError, dialect: ErrorDialect): unknown {
  if (dialect === "anthropic") {
    return { type: "error", error: { type: anthropicTypeFor(err.status), message: err.message } };
  }
  return { error: { message: err.message, type: err.type, param: err.param, code: err.code } };
}

// Constructors for the errors the contract names, so codes and wording stay consistent.

export const badRequest = (param: string | null, message: string, code = "invalid_request_error") =>
  new ApiError(400, code, message, param);

export const invalidField = (param: string, rule: string) =>
  new ApiError(400, "invalid_value", `Invalid '${param}': ${rule}.`, param);

export const missingField = (param: string) =>
  new ApiError(400, "missing_required_parameter", `Missing required parameter: '${param}'.`, param);

export const modelNotFound = (model: string) =>
  new ApiError(404, "model_not_found", `The model '${model}' does not exist. GET /v1/models lists the available models.`, "model");

export const modelUnavailable = (model: string) =>
  new ApiError(503, "model_unavailable", `The model '${model}' is not available right now. Try again later.`, "model", { "retry-after": "5" });

export const wrongEndpoint = (model: string, endpoint: string) =>
  new ApiError(400, "wrong_endpoint", `The model '${model}' is not supported on this endpoint; it belongs to ${endpoint}.`, "model");

export const insufficientCredits = (neededUsd: string, availableUsd: string) =>
  new ApiError(402, "insufficient_credits", `Insufficient credits: this request needs up to ${neededUsd} USD to be reserved, but the available balance is ${availableUsd} USD.`);

export const notFound = (message: string) => new ApiError(404, "not_found", message);

export const upstreamError = () =>
  new ApiError(502, "upstream_error", "The model backend returned an error. The request was not billed; please retry.");

export const upstreamTimeout = () =>
  new ApiError(504, "upstream_timeout", "The model backend did not answer in time. The request was not billed; please retry.");

export const internalError = () =>
  new ApiError(500, "internal_error", "The server had an error while processing your request.");
