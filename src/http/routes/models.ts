/**
 * GET /v1/models (no key needed) and GET /v1/models/{id}: live models only. A request with an
 * `anthropic-version` header (the Anthropic SDK, Claude Code) gets Anthropic's list shape.
 * Model aliases are not models and are never listed.
 */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { anthropicModelObject, anthropicModels, listModels, modelObject, pageAnthropicModels } from "../../catalog/model-list";
import { catalogView, type ModelList } from "../../catalog/catalog-view";
import { invalidField, modelNotFound } from "../../errors";
import { suggestModels } from "../../catalog/suggest";
import { TURBO_SUFFIX } from "../../catalog/catalog";

/** Reads the model list: the catalog, which models are live, and the routes' version. */
export function registerModelRoutes(app: App, s: ModelList, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/v1/models", summary: "List the live models (no API key needed).", auth: "none", public: true });
  docs.add({ method: "GET", path: "/v1/models/:id", summary: "One model by id, or 404.", auth: "none" });

  // Both lists are built once per version of the model list (catalog-view.ts), not per request.
  app.get("/v1/models", ({ request, query, set }) => {
    const view = catalogView(s);
    if (!request.headers.has("anthropic-version")) {
      set.headers["content-type"] = "application/json";
      return view.memo("openai-models-json", () => JSON.stringify(listModels(view.entries().live)));
    }
    const q = query as Record<string, string | undefined>;
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalidField("limit", "must be an integer from 1 to 1000");
    return pageAnthropicModels(view.memo("anthropic-models", () => anthropicModels(view.entries().live)), { limit, afterId: q.after_id, beforeId: q.before_id });
  });
  app.get("/v1/models/*", ({ params, request }) => {
    let id: string;
    try {
      id = decodeURIComponent(params["*"]);
    } catch {
      throw modelNotFound(params["*"]);
    }
    const resolved = s.catalog.resolve(id);
    if (!resolved || !s.isLive(resolved.entry)) throw modelNotFound(id, resolved ? [] : suggestModels(s, id));
    const turbo = resolved.tier === "priority" && id.endsWith(TURBO_SUFFIX);
    if (request.headers.has("anthropic-version")) {
      if (resolved.entry.kind !== "chat") throw modelNotFound(id);
      return anthropicModelObject(resolved.entry, turbo);
    }
    return modelObject(resolved.entry, turbo);
  });
}
