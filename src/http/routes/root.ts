/** The root status document at / and /v1. */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { SERVICE_NAME, VERSION } from "../../version";

/** Uses no service: the status document lists the route table. */
export function registerRootRoutes(app: App, _deps: unknown, docs: RouteDocs): void {
  const status = () => ({
    status: "ok",
    service: SERVICE_NAME,
    version: VERSION,
    endpoints: docs.routes.filter((r) => r.public).map((r) => `${r.method} ${r.path}`),
    docs: "/docs",
  });
  for (const path of ["/", "/v1"]) {
    docs.add({ method: "GET", path, summary: "Service status and the list of served endpoints.", auth: "none" });
    app.get(path, status);
  }
  docs.add({ method: "GET", path: "/healthz", summary: "Liveness probe.", auth: "none" });
  app.get("/healthz", () => ({ status: "ok" }));
}
