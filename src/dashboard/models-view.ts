/**
 * The operator's models page (docs/dashboard.md): every catalog model with its prices (as GET
 * /v1/models writes them), context window, whether it is live now, and for chat models each route
 * with its circuit breaker. Routes show the upstream's configured name, never its address.
 */
import { modelObject } from "../catalog/model-list";
import type { ModelEntry } from "../catalog/catalog";
import { serviceState, type ServiceStateSources } from "./service-state";

export function modelsView(s: ServiceStateSources & { isLive(entry: ModelEntry): boolean }) {
  const routes = serviceState(s).routes;
  return {
    data: s.catalog.all().map((e) => {
      const m = modelObject(e, false);
      return {
        id: e.id,
        type: e.kind,
        owned_by: e.ownedBy,
        live: s.isLive(e),
        discovered: e.discovered === true,
        context_window: e.kind === "speech" ? null : e.contextWindow,
        max_output_tokens: e.kind === "chat" ? e.maxOutputTokens : null,
        turbo_available: e.turbo,
        pricing: m.pricing,
        routes: routes.filter((r) => r.model === e.id),
      };
    }),
  };
}
