/**
 * Sends one chat request to the first route that answers. Before the first byte, a connect
 * error, timeout, 429 or 5xx moves on to the next route; nothing has been billed or relayed yet,
 * so a retry is invisible to the client. Failures are mapped to the contract's error shapes.
 */
import type { Services } from "../services";
import type { ServiceTier } from "../catalog/catalog";
import { ApiError, modelUnavailable, upstreamError, upstreamTimeout } from "../http/errors";
import { postChatCompletions, UpstreamFailure } from "./client";
import type { Route } from "./registry";

/** Thrown when the client disconnected while we were still waiting for an upstream. */
export class ClientGone extends Error {}

export interface Dispatched {
  response: Response;
  route: Route;
}

export async function dispatchChat(
  s: Services,
  publicId: string,
  tier: ServiceTier,
  body: Record<string, unknown>,
  signal: AbortSignal,
  requestId: string,
): Promise<Dispatched> {
  const routes = s.routes.routesFor(publicId, tier);
  if (routes.length === 0) throw modelUnavailable(publicId);
  let last: UpstreamFailure | null = null;
  for (const route of routes) {
    try {
      const response = await postChatCompletions(route, { ...body, model: route.model }, signal);
      return { response, route };
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) throw err;
      if (err.kind === "aborted") throw new ClientGone();
      last = err;
      s.log.warn("upstream attempt failed", { request_id: requestId, upstream: route.upstream.name, kind: err.kind, status: err.status });
      if (!err.retryable) break;
    }
  }
  throw mapFailure(last!);
}

function mapFailure(f: UpstreamFailure): ApiError {
  if (f.kind === "timeout") return upstreamTimeout();
  if (f.kind === "status" && f.status === 429) {
    return new ApiError(503, "model_unavailable", "The model is at capacity right now. The request was not billed; please retry shortly.", "model", { "retry-after": "2" });
  }
  if (f.kind === "status" && f.status !== null && f.status >= 400 && f.status < 500) {
    // The backend refused the request itself; its words stay internal.
    return new ApiError(400, "invalid_request_error", "The model backend rejected the request as invalid. Check the request's parameters.");
  }
  return upstreamError();
}
