/**
 * The app every route module registers on, and what a route module exports: the function that
 * adds its routes given the few services it declares. The app (app.ts) installs its hooks, then
 * calls the functions of routes/index.ts in their order.
 */
import { Elysia } from "elysia";
import { bearer } from "@elysiajs/bearer";
import type { RouteDocs } from "./route-docs";

/**
 * Every handler's `bearer` comes from @elysiajs/bearer. The plugin also reads `?access_token=`
 * from the URL, but a request carrying a key in its query is refused before any key is looked at
 * (refuseKeyInQuery in auth.ts), so only the Authorization header's credential is ever used.
 */
export function baseApp() {
  return new Elysia({ name: "switchyard" }).use(bearer());
}
export type App = ReturnType<typeof baseApp>;

/** Adds a module's routes to `app` (none when the module is switched off), each described once in `docs`. */
export type RouteModule<D> = (app: App, deps: D, docs: RouteDocs) => void;
