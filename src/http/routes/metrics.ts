/**
 * GET /metrics: Prometheus text exposition. Labels carry endpoints, catalog model ids and statuses,
 * never accounts, keys or upstream names, so it is safe to scrape without a token.
 */
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { requestMetrics } from "../../metrics/request-metrics";

export function registerMetricsRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/metrics", summary: "Prometheus metrics (text exposition format).", auth: "none" });
  requestMetrics(s);
  app.get("/metrics", () => new Response(s.metrics.render(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } }));
}
