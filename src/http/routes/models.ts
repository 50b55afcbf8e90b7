/** GET /v1/models (no key needed) and GET /v1/models/{id}: live models only. */
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { listModels, modelObject } from "../../catalog/model-list";
import { modelNotFound } from "../../errors";
import { TURBO_SUFFIX } from "../../catalog/catalog";

export function registerModelRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/v1/models", summary: "List the live models (no API key needed).", auth: "none", public: true });
  docs.add({ method: "GET", path: "/v1/models/:id", summary: "One model by id, or 404.", auth: "none" });

  app.get("/v1/models", () => listModels(s.catalog, s.isLive));
  app.get("/v1/models/*", ({ params }) => {
    let id: string;
    try {
      id = decodeURIComponent(params["*"]);
    } catch {
      throw modelNotFound(params["*"]);
    }
    const resolved = s.catalog.resolve(id);
    if (!resolved || !s.isLive(resolved.entry)) throw modelNotFound(id);
    return modelObject(resolved.entry, resolved.tier === "priority" && id.endsWith(TURBO_SUFFIX));
  });
}
