/**
 * GET /metrics: Prometheus text exposition. Labels carry endpoints, catalog model ids, statuses and
 * route positions, never accounts, keys or upstream names. Open by default (Prometheus
 * convention); with SWITCHYARD_METRICS_TOKEN set it needs `Authorization: Bearer <token>`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { DomainError } from "../../errors";
import type { Config } from "../../config";
import { registerServiceMetrics, type ServiceMetricSources } from "../../metrics/service-metrics";
import { bearerOf, refuseKeyInQuery } from "../auth";

const digest = (v: string) => createHash("sha256").update(v).digest();

/** What GET /metrics uses: the registry, what the service metrics read, and the scrape token. */
export interface MetricsRouteDeps extends ServiceMetricSources {
  config: Pick<Config, "metricsToken">;
}

/** 401 unless the request carries the metrics token (compared in constant time). */
function authorizeScrape(s: MetricsRouteDeps, request: Request, bearer: string | undefined): void {
  const expected = s.config.metricsToken;
  if (expected === null) return;
  refuseKeyInQuery(request);
  const token = bearer || bearerOf(request);
  if (!token) throw new DomainError("authentication", "missing_api_key", "/metrics needs 'Authorization: Bearer <SWITCHYARD_METRICS_TOKEN>' (Prometheus: authorization.credentials in the scrape config).");
  if (!timingSafeEqual(digest(token), digest(expected))) throw new DomainError("authentication", "invalid_api_key", "Incorrect metrics token.");
}

export function registerMetricsRoutes(app: App, s: MetricsRouteDeps, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/metrics", summary: "Prometheus metrics (text exposition format); needs the metrics token when SWITCHYARD_METRICS_TOKEN is set.", auth: "none" });
  registerServiceMetrics(s);
  app.get("/metrics", ({ request, bearer }) => {
    authorizeScrape(s, request, bearer);
    return new Response(s.metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
  });
}
