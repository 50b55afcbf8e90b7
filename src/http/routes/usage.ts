import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";

/** Registered by its own issue's work; empty until then. */
export function registerUsageRoutes(_app: App, _s: Services, _docs: RouteDocs): void {}
