/**
 * What the operator view shows about the running service: every chat route with its circuit
 * breaker, the local models loaded, and what is in flight right now. Upstream addresses are not
 * shown (only the names the operator gave them in SWITCHYARD_ROUTES).
 */
import type { Catalog } from "../catalog/catalog";
import type { RouteRegistry } from "../upstream/registry";
import type { EngineRegistry } from "../engines/registry";
import type { Limiter } from "../limits/limiter";
import type { Ledger } from "../billing/ledger";

/** What the operator's service view reads: the catalog, the routes, the engines, the limiter and the ledger. */
export interface ServiceStateSources {
  catalog: Pick<Catalog, "all">;
  routes: Pick<RouteRegistry, "snapshot" | "hasRoute">;
  engines: Pick<EngineRegistry, "isLoaded">;
  limits: Pick<Limiter, "totalInFlight">;
  ledger: Pick<Ledger, "pendingHolds">;
}

export function serviceState(s: ServiceStateSources) {
  const entries = s.catalog.all();
  const chatIds = entries.filter((e) => e.kind === "chat").map((e) => e.id);
  const routes = s.routes.snapshot?.(chatIds) ?? [];
  return {
    routes: routes.map((r) => ({
      model: r.model,
      route: r.route,
      upstream: r.upstream,
      upstream_model: r.upstreamModel,
      weight: r.weight,
      priority: r.priority,
      breaker: r.state,
      consecutive_failures: r.failures,
    })),
    local_models: entries
      .filter((e) => e.kind !== "chat")
      .map((e) => ({ model: e.id, kind: e.kind, loaded: s.engines.isLoaded(e.id) })),
    requests_in_flight: s.limits.totalInFlight(),
    holds_open: s.ledger.pendingHolds(),
    chat_models_without_route: chatIds.filter((id) => !s.routes.hasRoute(id)).length,
  };
}
