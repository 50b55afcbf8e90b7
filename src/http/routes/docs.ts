/** /docs: a readable reference page, and /docs/openapi.json generated from the route table. */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { buildOpenApi, renderDocsPage } from "../openapi";

/** Uses no service: the pages are made from the route table. */
export function registerDocsRoutes(app: App, _deps: unknown, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/docs", summary: "This reference, as a page.", auth: "none" });
  docs.add({ method: "GET", path: "/docs/openapi.json", summary: "The OpenAPI 3.1 document.", auth: "none" });
  app.get("/docs", () => new Response(renderDocsPage(docs), { headers: { "content-type": "text/html; charset=utf-8" } }));
  app.get("/docs/openapi.json", () => buildOpenApi(docs));
}
