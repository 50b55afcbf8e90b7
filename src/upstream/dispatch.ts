/**
 * Sends one chat request to the first route that answers. Routes are tried in weighted random
 * order, skipping those whose circuit breaker is open. Before the first byte, a connect error,
 * timeout, 429 or 5xx moves on to the next route; nothing has been billed or relayed yet (the
 * hold is per request id and settles once, after dispatch), so a retry is invisible to the client
 * and never charges twice. The route's circuit breaker hears each outcome (breaker.ts: one
 * account's failures alone never open it). Failures are mapped to the contract's error shapes; upstream names,
 * hosts and error text go only to logs as route labels and kinds.
 */
import type { Config } from "../config";
import type { Log } from "../log";
import type { ServiceTier } from "../catalog/catalog";
import { DomainError, modelUnavailable, upstreamError, upstreamTimeout } from "../errors";
import { postChatCompletions, UpstreamFailure, type UpstreamReply } from "./client";
import type { Route, RouteRegistry } from "./registry";
import type { ConnectionPool } from "./http1/pool";
import type { Cell, Counter, MetricsRegistry } from "../metrics/registry";

/** What dispatching a chat uses: the routes' plans, the keep-alive pool, the attempt counter and the log. */
export interface ChatDispatch {
  routes: Pick<RouteRegistry, "plan">;
  upstreamPool: ConnectionPool;
  metrics: MetricsRegistry;
  config: Pick<Config, "upstreamPoolScope">;
  log: Log;
}

/** Thrown when the client disconnected while we were still waiting for an upstream. */
export class ClientGone extends Error {}

export interface Dispatched {
  response: UpstreamReply;
  route: Route;
}

/** The body for one route: its model name, and the priority hint where the route needs one. */
export function bodyForRoute(body: Record<string, unknown>, route: Route, hinted: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model: route.model };
  // `priority` jumps an engine's queue: only turbo (billed 1.5x) may set it, never the client.
  delete out.priority;
  if (hinted && route.upstream.priorityHint !== null) out.priority = route.upstream.priorityHint;
  return out;
}

export async function dispatchChat(
  s: ChatDispatch,
  publicId: string,
  tier: ServiceTier,
  body: Record<string, unknown>,
  signal: AbortSignal,
  requestId: string,
  /** Whose request it is: one account's failing requests alone never open a breaker. */
  accountId: string | null = null,
): Promise<Dispatched> {
  const plan = s.routes.plan(publicId, tier);
  if (plan.length === 0) throw modelUnavailable(publicId);
  const attempts = s.metrics.counter("switchyard_upstream_attempts_total", "Chat requests sent to an upstream route, by route label (model#index) and outcome.");
  let last: UpstreamFailure | null = null;
  for (const { route, hinted } of plan) {
    if (!route.health.tryAcquire()) continue;
    try {
      const response = await postChatCompletions(route.upstream, bodyForRoute(body, route, hinted), {
        signal,
        onMidStreamFailure: () => route.health.failure(),
        pool: s.upstreamPool,
        // Per account: a late reply on a pooled connection never reaches another account.
        partition: s.config.upstreamPoolScope === "account" ? (accountId ?? "") : "",
      });
      route.health.success();
      okAttempts(attempts, route).value++;
      return { response, route };
    } catch (err) {
      if (!(err instanceof UpstreamFailure)) {
        route.health.neutral();
        throw err;
      }
      if (err.kind === "aborted") {
        route.health.neutral();
        throw new ClientGone();
      }
      attempts.inc({ route: route.label, outcome: err.kind === "status" ? `http_${err.status}` : err.kind });
      if (err.routeFault) route.health.failure(Date.now(), { answer: err.mayBeContent, account: accountId });
      else route.health.success();
      last = err;
      s.log.warn("upstream attempt failed", { request_id: requestId, route: route.label, kind: err.kind, status: err.status });
      if (!err.retryable) break;
    }
  }
  if (last === null) throw modelUnavailable(publicId);
  throw mapFailure(last);
}

/** Each route's series of successful attempts, looked up once (per registry: tests run several). */
const okSeries = new WeakMap<Route, { counter: Counter; cell: Cell }>();
function okAttempts(counter: Counter, route: Route): Cell {
  let hit = okSeries.get(route);
  if (hit === undefined || hit.counter !== counter) okSeries.set(route, (hit = { counter, cell: counter.cell({ route: route.label, outcome: "ok" }) }));
  return hit.cell;
}

const CONTEXT_HINT = /context length|context window|maximum context|too many tokens|prompt is too long/i;

/** The client-facing error for the last failure; the upstream's own words never pass. */
export function mapFailure(f: UpstreamFailure): DomainError {
  if (f.kind === "timeout") return upstreamTimeout();
  if (f.kind === "status" && f.status === 429) {
    return new DomainError("unavailable", "model_unavailable", "The model is at capacity right now. The request was not billed; please retry shortly.", "model", 2);
  }
  if (f.kind === "status" && (f.status === 400 || f.status === 413 || f.status === 422)) {
    if (CONTEXT_HINT.test(f.detail)) {
      return new DomainError("invalid_request", "context_length_exceeded", "The input is longer than this model's context window allows. Please reduce the length of the messages or max_tokens.", "messages");
    }
    return new DomainError("invalid_request", "invalid_request_error", "The model backend rejected the request as invalid. Check the request's parameters.");
  }
  return upstreamError();
}
