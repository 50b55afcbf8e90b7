/**
 * The gateway's Prometheus metrics (GET /metrics), defined once per registry. Labels are bounded:
 * endpoints are route patterns, models are catalog ids (unknown ids become "unknown"), never
 * account ids or anything a client can make up.
 */
import { LATENCY_BUCKETS, type Cell, type Counter, type Histogram, type MetricsRegistry } from "../metrics/registry";
import type { Ledger } from "../billing/ledger";
import type { Limiter } from "../limits/limiter";

export interface RequestMetrics {
  requests: Counter;
  latency: Histogram;
  overhead: Histogram;
  upstreamErrors: Counter;
  /** Arrival to the first content chunk sent, for streamed chat (completions, messages, responses), by model. */
  timeToFirstToken: Histogram;
}

const cache = new WeakMap<MetricsRegistry, RequestMetrics>();

interface ChargeSeries {
  labels: { endpoint: string; model: string };
  tier: string;
  input: Cell | null;
  output: Cell | null;
  cacheRead: Cell | null;
  cacheWrite: Cell | null;
  characters: Cell | null;
  credits: Cell | null;
  charges: Cell | null;
}

/** The request metrics of a registry, defined on first use. */
export function requestMetrics(m: MetricsRegistry): RequestMetrics {
  const hit = cache.get(m);
  if (hit) return hit;
  const defined: RequestMetrics = {
    requests: m.counter("switchyard_requests_total", "HTTP requests by endpoint, model and status."),
    latency: m.histogram("switchyard_request_duration_seconds", "Time from arrival to the end of the response body (streams included).", LATENCY_BUCKETS),
    overhead: m.histogram("switchyard_gateway_overhead_seconds", "Request time not spent waiting on an upstream or a local engine.", LATENCY_BUCKETS),
    upstreamErrors: m.counter("switchyard_upstream_errors_total", "Requests that failed because of an upstream or engine, by endpoint and kind."),
    timeToFirstToken: m.histogram("switchyard_time_to_first_token_seconds", "Streamed chat: time from arrival to the first content chunk relayed, by model.", LATENCY_BUCKETS),
  };
  cache.set(m, defined);
  return defined;
}

/** What the charge and slot metrics are read from. */
export interface ChargeSources {
  metrics: MetricsRegistry;
  ledger: Pick<Ledger, "pendingHolds" | "onClamped" | "onSettled">;
  limits: Pick<Limiter, "totalInFlight">;
}

const charged = new WeakSet<MetricsRegistry>();

/**
 * The metrics fed by the ledger and the limiter (billed tokens, characters and credits, holds
 * open, requests in flight, limit refusals), installed once per registry. The app installs them
 * right after the request metrics: the exposition lists metrics in the order they were defined.
 */
export function installChargeMetrics(s: ChargeSources): void {
  const m = s.metrics;
  if (charged.has(m)) return;
  charged.add(m);
  const tokens = m.counter("switchyard_tokens_total", "Billed tokens by endpoint, model and direction.");
  const promptCache = m.counter("switchyard_prompt_cache_tokens_total", "Of the billed input tokens, those the upstream read from (kind=read) or wrote to (kind=write) its prompt cache, by endpoint and model.");
  const characters = m.counter("switchyard_characters_total", "Billed speech characters (Unicode code points) by model.");
  const credits = m.counter("switchyard_credits_charged_nano_usd_total", "Credits charged, in nano-USD (1e-9 USD), by endpoint and model.");
  const charges = m.counter("switchyard_charges_total", "Durable charges by endpoint, model and service tier.");
  const clamps = m.counter("switchyard_charge_clamps_total", "Charges clamped to their hold because the reported usage cost more, by endpoint and model.");
  m.gauge("switchyard_holds_open", "Credit holds not yet settled or released (voids waiting for the store included).", () => s.ledger.pendingHolds());
  s.ledger.onClamped((c) => clamps.inc({ endpoint: c.endpoint, model: c.model }));
  m.gauge("switchyard_requests_in_flight", "Admitted requests holding a concurrency slot.", () => s.limits.totalInFlight());
  m.counter("switchyard_limit_rejections_total", "Requests refused by a per-account limit.");
  // The series of each endpoint, model and tier, looked up once (bounded like their labels); a
  // series appears in the exposition only once something was recorded in it, as before.
  const chargeSeries = new Map<string, ChargeSeries>();
  s.ledger.onSettled((c) => {
    const k = `${c.endpoint} ${c.model} ${c.serviceTier}`;
    let x = chargeSeries.get(k);
    if (x === undefined) {
      x = { labels: { endpoint: c.endpoint, model: c.model }, tier: c.serviceTier, input: null, output: null, cacheRead: null, cacheWrite: null, characters: null, credits: null, charges: null };
      if (chargeSeries.size < 10_000) chargeSeries.set(k, x);
    }
    if (c.inputTokens) (x.input ??= tokens.cell({ ...x.labels, direction: "input" })).value += c.inputTokens;
    if (c.outputTokens) (x.output ??= tokens.cell({ ...x.labels, direction: "output" })).value += c.outputTokens;
    if (c.cachedTokens) (x.cacheRead ??= promptCache.cell({ ...x.labels, kind: "read" })).value += c.cachedTokens;
    if (c.cacheWriteTokens) (x.cacheWrite ??= promptCache.cell({ ...x.labels, kind: "write" })).value += c.cacheWriteTokens;
    if (c.characters) (x.characters ??= characters.cell(x.labels)).value += c.characters;
    (x.credits ??= credits.cell(x.labels)).value += c.charged;
    (x.charges ??= charges.cell({ ...x.labels, tier: x.tier })).value++;
  });
}
