/**
 * The hooks every request passes through, installed once on the app before the routes:
 *   - a context per request (start time, engine time, concurrency slot);
 *   - a Response body of an admitted request is wrapped so the request ends when the stream does — on close,
 *     client cancel or error — and only then releases its slot and records latency;
 *   - any other response ends the request as soon as it is complete in memory: in the after-handle
 *     hook, or in the app's error hook (endFailedRequest) for errors.
 * Ending gives the slot back, records the request metrics and writes one structured log line. So
 * no route has to remember to release. (SSE bodies made by producerStream report their own end, so
 * they are not wrapped again.)
 *
 * There is no after-response hook on purpose: Elysia runs one through setImmediate and an async
 * closure per request, and it would learn nothing that the two hooks here do not already know.
 */
import type { App } from "./route-module";
import type { Log } from "../log";
import type { Drain } from "../limits/drain";
import type { MetricsRegistry } from "../metrics/registry";
import type { RequestOutcomes } from "../generations/outcomes";
import { beginRequest, contextOf, endRequest, type RequestContext } from "./request-context";
import { requestMetrics, type RequestMetrics } from "../metrics/request-metrics";
import { resolveId, type ModelIds } from "../catalog/resolve";
import type { Cell, HistogramSeries } from "../metrics/registry";
import { watchProducerEnd, type StreamEnd } from "../metering/producer-stream";
import type { RequestEnd } from "../generations/outcomes";
import { ElysiaCustomStatusResponse } from "elysia";

export interface HookContext {
  request: Request;
  set: { headers: Record<string, unknown>; status?: number | string };
  route?: string;
  body?: unknown;
  responseValue?: unknown;
}

/**
 * What the lifecycle uses: requests in flight (graceful stop), the request metrics, the outcome
 * records, the log, and the model ids requests are reported under.
 */
export interface RequestLifecycleDeps extends ModelIds {
  drain: Drain;
  metrics: MetricsRegistry;
  outcomes: RequestOutcomes;
  log: Log;
}

/** The series one request records into, looked up once per endpoint, model and status. */
interface SeriesLabels {
  requests: Cell;
  latency: HistogramSeries;
  overhead: HistogramSeries;
}

/**
 * Installs the hooks that begin, measure and end every request, and returns what ends a request
 * that failed (any error the app's error hook mapped to `status`): it releases the slot, records
 * the request and logs it. A request whose response is already streaming is the stream's to end;
 * only its slot is made sure of.
 */
export function installRequestLifecycle(app: App, s: RequestLifecycleDeps): (hc: HookContext, status: number) => void {
  const metrics: RequestMetrics = requestMetrics(s.metrics);
  const seriesCache = new Map<string, SeriesLabels>();
  const seriesFor = (endpoint: string, model: string, status: number): SeriesLabels => {
    const k = `${endpoint} ${model} ${status}`;
    let set = seriesCache.get(k);
    if (set === undefined) {
      set = {
        requests: metrics.requests.cell({ endpoint, model, status }),
        latency: metrics.latency.seriesOf({ endpoint }),
        overhead: metrics.overhead.seriesOf({ endpoint }),
      };
      // Bounded: endpoints are route patterns, models catalog ids (or "unknown"/"none"), statuses few.
      if (seriesCache.size < 10_000) seriesCache.set(k, set);
    }
    return set;
  };

  const finish = (hc: HookContext, ctx: RequestContext, status: number, outcome: string) => {
    if (!endRequest(ctx)) return;
    s.drain.end();
    const totalMs = performance.now() - ctx.startedAt;
    const overheadMs = Math.max(0, totalMs - ctx.engineMs);
    const endpoint = hc.route ?? "unmatched";
    const model = modelLabel(s, hc.body);
    const series = seriesFor(endpoint, model, status);
    series.requests.value++;
    metrics.latency.observeIn(series.latency, totalMs / 1000);
    metrics.overhead.observeIn(series.overhead, overheadMs / 1000);
    if (status === 502 || status === 504) metrics.upstreamErrors.inc({ endpoint, kind: status === 502 ? "upstream_error" : "upstream_timeout" });
    // For generation records: an array push here, written in batches off the request path.
    if (ctx.accountId) {
      s.outcomes.record({
        requestId: ctx.requestId, accountId: ctx.accountId, keyId: ctx.caller?.keyId ?? null, endpoint, model, httpStatus: status,
        outcome: outcome as RequestEnd, streamed: ctx.streamed, durationMs: totalMs, engineMs: ctx.engineMs,
      });
    }
    // At info level this is the one line per request; below it, its fields are never built.
    if (!s.log.enabled("info")) return;
    const cost = hc.set.headers["x-request-cost"];
    const fields: Record<string, unknown> = {
      request_id: ctx.requestId,
      method: hc.request.method,
      endpoint,
      status,
      outcome,
      duration_ms: round(totalMs),
      engine_ms: round(ctx.engineMs),
      overhead_ms: round(overheadMs),
    };
    if (ctx.accountId) fields.account_id = ctx.accountId;
    if (model !== "none") fields.model = model;
    if (typeof cost === "string") fields.cost_usd = cost;
    s.log.info("request", fields);
  };

  app
    .onRequest(({ request, set }) => {
      beginRequest(request, String(set.headers["x-request-id"] ?? ""));
      s.drain.begin();
    })
    // Destructured on purpose: Elysia fills only the context fields a hook's source names.
    .onAfterHandle({ as: "global" }, ({ request, set, route, body, responseValue }) => {
      const c: HookContext = { request, set: set as HookContext["set"], route, body, responseValue };
      const ctx = contextOf(c.request);
      if (!ctx || ctx.streamed || ctx.finished) return;
      const value = c.responseValue;
      const statusOf = (fallback: number) => (typeof c.set.status === "number" ? c.set.status : fallback);
      // Only an admitted request has a slot to hold until its body ends; others finish at once.
      if (value instanceof Response && value.body && ctx.slot && !hasDeclaredLength(value)) {
        ctx.streamed = true;
        const done = (outcome: StreamEnd) => finish(c, ctx, statusOf(value.status), outcome);
        // Our own SSE bodies report their end themselves; any other body is wrapped to watch it.
        if (watchProducerEnd(value.body, done)) return;
        const body = onStreamEnd(value.body, done);
        return new Response(body, { status: value.status, statusText: value.statusText, headers: value.headers });
      }
      if (isAsyncIterable(value)) {
        ctx.streamed = true;
        return wrapIterable(value, (outcome) => finish(c, ctx, statusOf(200), outcome)) as unknown as Response;
      }
      // A plain value is the whole response: the work is over.
      let status = statusOf(200);
      if (value instanceof ElysiaCustomStatusResponse) status = value.code;
      else if (value instanceof Response && status === 200) status = value.status;
      finish(c, ctx, status, "sent");
    });

  return (hc, status) => {
    const ctx = contextOf(hc.request);
    if (!ctx) return;
    if (ctx.finished || ctx.streamed) {
      ctx.slot?.release();
      return;
    }
    finish(hc, ctx, status, "sent");
  };
}

/**
 * Bun cannot tell a streamed body from a buffered one, so any Response body of an admitted request
 * is wrapped — unless the route declared its length, which means it is complete already.
 */
function hasDeclaredLength(r: Response): boolean {
  return r.headers.get("content-length") !== null;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === "object" && v !== null && typeof (v as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function" && !(v instanceof Response);
}

/**
 * Passes the body through unchanged (pull-based, no extra buffering) and calls `done` exactly
 * once when it completes, fails, or the client cancels.
 */
export function onStreamEnd(body: ReadableStream<Uint8Array>, done: (outcome: "completed" | "cancelled" | "failed") => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = (o: "completed" | "cancelled" | "failed") => {
    if (ended) return;
    ended = true;
    done(o);
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (err) {
          end("failed");
          controller.error(err);
          return;
        }
        if (r.done) {
          end("completed");
          controller.close();
        } else controller.enqueue(r.value);
      },
      cancel(reason) {
        end("cancelled");
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

async function* wrapIterable<T>(source: AsyncIterable<T>, done: (outcome: "completed" | "cancelled" | "failed") => void): AsyncGenerator<T> {
  let outcome: "completed" | "cancelled" | "failed" = "cancelled";
  try {
    yield* source;
    outcome = "completed";
  } catch (err) {
    outcome = "failed";
    throw err;
  } finally {
    done(outcome);
  }
}

/** The model a request is reported under: its id, an alias's target, or "unknown" (bounded labels). */
function modelLabel(s: ModelIds, body: unknown): string {
  const id = (body as { model?: unknown } | null | undefined)?.model;
  if (typeof id !== "string") return "none";
  return resolveId(s, id)?.requestedId ?? "unknown";
}

const round = (ms: number) => Math.round(ms * 100) / 100;
