/**
 * GET /readyz, the readiness probe (docs/operate.md, "Stopping and readiness"): 200 while this instance
 * should get traffic, 503 once it is stopping or when its store cannot be read or written. The
 * body reports the store, every configured model (chat: its routes' circuit breakers; local
 * engines: loaded or not) and the requests in flight. Unauthenticated like /healthz, so upstream
 * names and addresses are left out (the operator view shows them). /healthz stays pure liveness.
 *
 * The models part is written once per version of the model list and of the breakers (and again
 * when an open breaker's cool-down ends), not per request: a probe costs the same whatever the
 * number of models an upstream lists.
 */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import type { RouteHealth } from "../../upstream/breaker";
import type { RouteRegistry } from "../../upstream/registry";
import type { DataStore } from "../../store/data-store";
import type { Ledger } from "../../billing/ledger";
import type { Drain } from "../../limits/drain";
import type { EngineRegistry } from "../../engines/registry";
import { catalogView, type ModelList } from "../../catalog/catalog-view";
import type { ModelKind } from "../../catalog/catalog";

/**
 * What /readyz reads: whether the server is stopping, the store (it answers, the ledger can
 * write), the model list with its routes' breakers, and the local engines.
 */
export interface ReadinessDeps extends ModelList {
  drain: Pick<Drain, "stopping" | "inFlight">;
  store: Pick<DataStore, "engine" | "ping">;
  ledger: Pick<Ledger, "writable">;
  routes: Pick<RouteRegistry, "offeredVersion" | "servedRoutes" | "healthVersion">;
  engines: Pick<EngineRegistry, "isLoaded">;
}

export function registerReadinessRoutes(app: App, s: ReadinessDeps, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/readyz", summary: "Readiness probe: 200 when this instance should get traffic, 503 when stopping or its store is down.", auth: "none" });
  const models = new ModelStates(s);
  app.get("/readyz", async ({ set }) => {
    const store = await storeState(s);
    const status = s.drain.stopping ? "stopping" : store.ok ? "ready" : "store_unavailable";
    set.status = status === "ready" ? 200 : 503;
    set.headers["cache-control"] = "no-store";
    set.headers["content-type"] = "application/json";
    return `{"status":"${status}","store":${JSON.stringify(store)},"models":${models.json()},"requests_in_flight":${s.drain.inFlight}}`;
  });
}

async function storeState(s: ReadinessDeps): Promise<{ engine: string; ok: boolean; error?: string }> {
  const engine = s.store.engine === "postgres" ? "postgresql" : "sqlite";
  try {
    await s.store.ping();
  } catch {
    return { engine, ok: false, error: "the database does not answer" };
  }
  if (!s.ledger.writable()) return { engine, ok: false, error: "the database cannot write (new requests get 503)" };
  return { engine, ok: true };
}

/** A model as /readyz lists it: a chat model with its served routes' breakers, or a local one. */
interface ModelLayout {
  id: string;
  kind: ModelKind;
  healths: RouteHealth[] | null;
}

/** The `models` array of /readyz, as JSON text, kept while nothing it shows has moved. */
class ModelStates {
  private key = "";
  private validUntil = Infinity;
  private text = "[]";

  constructor(private readonly s: ReadinessDeps) {}

  /** Every catalog model with its served routes, once per version of the list. */
  private layout(): ModelLayout[] {
    const { s } = this;
    const view = catalogView(s);
    return view.memo("readiness-layout", () =>
      view.entries().all.map((e) => ({
        id: e.id,
        kind: e.kind,
        healths: e.kind === "chat" ? (s.routes.servedRoutes?.(e.id) ?? []).map((r) => r.health) : null,
      })),
    );
  }

  json(): string {
    const { s } = this;
    const health = s.routes.healthVersion?.();
    const now = Date.now();
    const key = health === undefined ? "" : `${catalogView(s).version}|${health}`;
    if (key !== "" && key === this.key && now < this.validUntil) return this.text;
    let validUntil = Infinity;
    const out = this.layout().map(({ id, kind, healths }) => {
      if (healths === null) {
        const loaded = s.engines.isLoaded(id);
        return { id, kind, ready: loaded, loaded };
      }
      const routes = healths.map((h) => {
        const until = h.openUntil(now);
        if (until !== null && until < validUntil) validUntil = until;
        return { breaker: h.state(now), consecutive_failures: h.failures };
      });
      return { id, kind, ready: routes.some((r) => r.breaker !== "open"), routes };
    });
    this.text = JSON.stringify(out);
    this.key = key;
    this.validUntil = validUntil;
    return this.text;
  }
}
