/**
 * The operator models page's editing API (/dashboard/api/operator/catalog/*), for a session signed
 * in with the admin token: models, prices, upstreams and routes managed live (docs/operate.md, "Managing
 * models, prices and routes live"; docs/live-config.md). Every write is the operation the admin API
 * and the CLI run (catalog/live-admin.ts), so the three never disagree. The dashboard sends prices
 * as decimal strings only, never floats; an upstream's key is write-only (views say `has_key`).
 */
import type { App } from "../route-module";
import { LiveCatalogAdmin, pathId, type LiveCatalogDeps } from "../../catalog/live-admin";
import { PRICE_FIELDS } from "../../catalog/catalog-format";
import { invalidField } from "../../errors";
import { dashboardHeaders } from "../../dashboard/assets";
import type { DashboardGuard } from "./guard";


/** Prices from the page travel as decimal strings ("0.20"): a number is refused, naming the field. */
function decimalStringPrices(body: unknown): unknown {
  const pricing = (body as { pricing?: unknown } | null)?.pricing;
  if (pricing === null || typeof pricing !== "object" || Array.isArray(pricing)) return body;
  for (const k of PRICE_FIELDS) {
    const v = (pricing as Record<string, unknown>)[k];
    if (v !== undefined && typeof v !== "string") throw invalidField(`pricing.${k}`, 'must be USD per million as a decimal string, e.g. "0.20"');
  }
  return body;
}

export function registerOperatorCatalog(app: App, s: LiveCatalogDeps, guard: DashboardGuard): void {
  const admin = new LiveCatalogAdmin(s);
  const base = "/dashboard/api/operator/catalog";
  const operator = async (request: Request, set: { headers: Record<string, unknown>; status?: unknown }) => {
    dashboardHeaders(set);
    await guard.session(request, "operator");
  };

  app.get(`${base}/models`, async ({ request, set }) => (await operator(request, set), admin.listModels()));
  app.post(`${base}/models`, async ({ request, set, body }) => {
    await operator(request, set);
    const out = await admin.createModel(decimalStringPrices(body));
    set.status = 201;
    return out;
  });
  app.patch(`${base}/models/*`, async ({ request, set, params, body }) => (await operator(request, set), admin.updateModel(pathId(params["*"], "id"), decimalStringPrices(body))));
  app.delete(`${base}/models/*`, async ({ request, set, params }) => (await operator(request, set), admin.deleteModel(pathId(params["*"], "id"))));

  app.get(`${base}/upstreams`, async ({ request, set }) => (await operator(request, set), admin.listUpstreams()));
  app.post(`${base}/upstreams`, async ({ request, set, body }) => {
    await operator(request, set);
    const out = await admin.createUpstream(body);
    set.status = 201;
    return out;
  });
  app.patch(`${base}/upstreams/:name`, async ({ request, set, params, body }) => (await operator(request, set), admin.updateUpstream(params.name, body)));
  app.delete(`${base}/upstreams/:name`, async ({ request, set, params }) => (await operator(request, set), admin.deleteUpstream(params.name)));

  app.get(`${base}/routes`, async ({ request, set }) => (await operator(request, set), admin.listRoutes()));
  app.put(`${base}/routes/*`, async ({ request, set, params, body }) => {
    await operator(request, set);
    return admin.setRoutes(pathId(params["*"], "model"), ((body ?? {}) as { routes?: unknown }).routes);
  });
  app.delete(`${base}/routes/*`, async ({ request, set, params }) => (await operator(request, set), admin.deleteRoutes(pathId(params["*"], "model"))));
}
