/**
 * GET /readyz, the readiness probe (README, "Stopping and readiness"): 200 while this instance
 * should get traffic, 503 once it is stopping or when its store cannot be read or written. The
 * body reports the store, every configured model (chat: its routes' circuit breakers; local
 * engines: loaded or not) and the requests in flight. Unauthenticated like /healthz, so upstream
 * names and addresses are left out (the operator view shows them). /healthz stays pure liveness.
 */
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";

export function registerReadinessRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/readyz", summary: "Readiness probe: 200 when this instance should get traffic, 503 when stopping or its store is down.", auth: "none" });
  app.get("/readyz", async ({ set }) => {
    const store = await storeState(s);
    const status = s.drain.stopping ? "stopping" : store.ok ? "ready" : "store_unavailable";
    set.status = status === "ready" ? 200 : 503;
    set.headers["cache-control"] = "no-store";
    return { status, store, models: modelStates(s), requests_in_flight: s.drain.inFlight };
  });
}

async function storeState(s: Services): Promise<{ engine: string; ok: boolean; error?: string }> {
  const engine = s.store.engine === "postgres" ? "postgresql" : "sqlite";
  try {
    await s.store.ping();
  } catch {
    return { engine, ok: false, error: "the database does not answer" };
  }
  if (!s.ledger.writable()) return { engine, ok: false, error: "the database cannot write (new requests get 503)" };
  return { engine, ok: true };
}

function modelStates(s: Services) {
  const entries = s.catalog.all();
  const routes = s.routes.snapshot?.(entries.filter((e) => e.kind === "chat").map((e) => e.id)) ?? [];
  return entries.map((e) => {
    if (e.kind !== "chat") return { id: e.id, kind: e.kind, ready: s.engines.isLoaded(e.id), loaded: s.engines.isLoaded(e.id) };
    const mine = routes.filter((r) => r.model === e.id).map((r) => ({ breaker: r.state, consecutive_failures: r.failures }));
    return { id: e.id, kind: e.kind, ready: mine.some((r) => r.breaker !== "open"), routes: mine };
  });
}
