/**
 * The admin API for models, prices, upstreams and routes managed live (docs/operate.md, "Managing models,
 * prices and routes live"), behind SWITCHYARD_ADMIN_TOKEN. Model ids may hold slashes: the id is
 * the rest of the path (`/admin/models/Qwen/Qwen3-8B`, or percent-encoded).
 */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import type { Config } from "../../config";
import { authenticateAdmin, sourceAddress, type AdminAuthDeps } from "../auth";
import { LiveCatalogAdmin, pathId, type LiveCatalogDeps } from "../../catalog/live-admin";
import { testRoute } from "../../upstream/route-test";
import { invalidField, notFound } from "../../errors";

/** What the live catalog's admin API uses: the live catalog, the admin token, and the trusted proxies. */
export type AdminCatalogRouteDeps = LiveCatalogDeps & AdminAuthDeps & { config: Pick<Config, "trustedProxies"> };

export function registerAdminCatalogRoutes(app: App, s: AdminCatalogRouteDeps, docs: RouteDocs): void {
  const admin = new LiveCatalogAdmin(s);
  const d = (method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, summary: string) => docs.add({ method, path, summary, auth: "admin" });
  d("GET", "/admin/models", "Every catalog entry (embedded, file, admin, discovered), disabled ones included, with its source and whether it is live.");
  d("POST", "/admin/models", "Add a model (or override a file or embedded entry): the catalog entry fields; prices per 1M USD as numbers or decimal strings.");
  d("GET", "/admin/models/:id", "One catalog entry (the id may contain slashes).");
  d("PATCH", "/admin/models/:id", "Change some fields of a model, its prices or `enabled`; applies to requests that start afterwards.");
  d("DELETE", "/admin/models/:id", "Remove a model written through the admin API (the file or embedded entry, if any, serves again).");
  d("GET", "/admin/upstreams", "Every upstream (env, file, admin); keys are never shown (`has_key`).");
  d("POST", "/admin/upstreams", "Add an upstream: {name, base_url, key?, key_env?, timeouts?, keep_alive?, priority_hint?, tls?}.");
  d("GET", "/admin/upstreams/:name", "One upstream.");
  d("PATCH", "/admin/upstreams/:name", "Change some fields of an upstream (`key: null` removes the key).");
  d("DELETE", "/admin/upstreams/:name", "Remove an upstream written through the admin API (refused while routes use it).");
  d("GET", "/admin/routes", "Every model's configured routes, their source and breaker state.");
  d("POST", "/admin/routes", "Set a model's routes: {model, routes: [{upstream, model?, weight?, priority?, pinned?}]} ([] takes it offline).");
  d("GET", "/admin/routes/:model", "One model's routes.");
  d("PUT", "/admin/routes/:model", "Set a model's routes: {routes: [...]}.");
  d("DELETE", "/admin/routes/:model", "Remove a model's routes written through the admin API (file or default routes serve again).");
  d("POST", "/admin/routes/test", "Send a tiny unbilled chat request through a model's routes (or one, `route`: its index) and report status, latency and the first words.");
  const authorized = (request: Request, bearer: string | undefined) => authenticateAdmin(s, request, bearer, sourceAddress(app, request, s.config.trustedProxies));

  app.get("/admin/models", ({ request, bearer }) => (authorized(request, bearer), admin.listModels()));
  app.post("/admin/models", async ({ request, bearer, body, set }) => {
    authorized(request, bearer);
    const out = await admin.createModel(body);
    set.status = 201;
    return out;
  });
  app.get("/admin/models/*", ({ request, bearer, params }) => (authorized(request, bearer), admin.getModel(pathId(params["*"], "id"))));
  app.patch("/admin/models/*", ({ request, bearer, params, body }) => (authorized(request, bearer), admin.updateModel(pathId(params["*"], "id"), body)));
  app.delete("/admin/models/*", ({ request, bearer, params }) => (authorized(request, bearer), admin.deleteModel(pathId(params["*"], "id"))));

  app.get("/admin/upstreams", ({ request, bearer }) => (authorized(request, bearer), admin.listUpstreams()));
  app.post("/admin/upstreams", async ({ request, bearer, body, set }) => {
    authorized(request, bearer);
    const out = await admin.createUpstream(body);
    set.status = 201;
    return out;
  });
  app.get("/admin/upstreams/:name", ({ request, bearer, params }) => (authorized(request, bearer), admin.getUpstream(params.name)));
  app.patch("/admin/upstreams/:name", ({ request, bearer, params, body }) => (authorized(request, bearer), admin.updateUpstream(params.name, body)));
  app.delete("/admin/upstreams/:name", ({ request, bearer, params }) => (authorized(request, bearer), admin.deleteUpstream(params.name)));

  app.get("/admin/routes", ({ request, bearer }) => (authorized(request, bearer), admin.listRoutes()));
  app.post("/admin/routes/test", async ({ request, bearer, body }) => {
    authorized(request, bearer);
    const b = (body ?? {}) as { model?: unknown; route?: unknown };
    if (typeof b.model !== "string" || b.model === "") throw invalidField("model", "must name a model with routes");
    const routes = s.routes.routesFor?.(b.model) ?? [];
    if (routes.length === 0) throw notFound(`No routes for '${b.model}'.`);
    if (b.route !== undefined && (typeof b.route !== "number" || !Number.isInteger(b.route) || b.route < 0 || b.route >= routes.length)) {
      throw invalidField("route", `must be a route index from 0 to ${routes.length - 1}`);
    }
    const picked = b.route === undefined ? routes.map((r, i) => [r, i] as const) : [[routes[b.route as number]!, b.route as number] as const];
    const results = await Promise.all(picked.map(([r, i]) => testRoute(r, i)));
    return { object: "route_test", model: b.model, results };
  });
  app.post("/admin/routes", ({ request, bearer, body }) => {
    authorized(request, bearer);
    const b = (body ?? {}) as { model?: unknown; routes?: unknown };
    return admin.setRoutes(b.model, b.routes);
  });
  app.get("/admin/routes/*", ({ request, bearer, params }) => (authorized(request, bearer), admin.getRoutes(pathId(params["*"], "model"))));
  app.put("/admin/routes/*", ({ request, bearer, params, body }) => {
    authorized(request, bearer);
    return admin.setRoutes(pathId(params["*"], "model"), ((body ?? {}) as { routes?: unknown }).routes);
  });
  app.delete("/admin/routes/*", ({ request, bearer, params }) => (authorized(request, bearer), admin.deleteRoutes(pathId(params["*"], "model"))));
}
