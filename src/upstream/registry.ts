/**
 * Where each public chat model can be served: named upstreams and per-model routes, from
 * SWITCHYARD_ROUTES (a file, re-read in the background when it changes, or inline JSON) and SWITCHYARD_UPSTREAM_URL
 * (the one-line default: every chat model the routes do not name goes there under its public
 * id). Upstreams and routes written through the admin API or the CLI lie over the file's (a model
 * with written routes ignores its file routes: docs/operate.md, "Managing models, prices and routes live").
 * Each route carries its circuit breaker, kept across reloads while the route is unchanged.
 * A route is served only while its upstream's GET /v1/models lists its model (model-lists.ts),
 * unless it is pinned or the upstream never answered a list (README, "Serve your own model").
 * Nothing from here is ever shown to a client.
 */
import { ConfigDocument, unreadable } from "../config-document";
import { ConfigError, type Config } from "../config";
import { RouteHealth, type BreakerPolicy, type BreakerState } from "./breaker";
import { planRoutes } from "./select";
import { UpstreamModelLists } from "./model-lists";
import type { OfferedModel } from "../catalog/discovered";
import { isModelId } from "../catalog/catalog-bounds";
import { proxyFor, type ProxySettings } from "./proxy";
import {
  DEFAULT_BREAKER, DEFAULT_PRIORITY_HINT, DEFAULT_TIMEOUTS, loadRoutes, RoutesConfigError,
  type RouteSpec, type RoutesTable, type UpstreamSpec,
} from "./routes-config";

export { DEFAULT_TIMEOUTS };
export type Upstream = UpstreamSpec;

export interface Route {
  upstream: Upstream;
  /** The model name the upstream knows. */
  model: string;
  weight: number;
  /** Serves turbo (priority-tier) requests. */
  priority: boolean;
  /** Served even when the upstream's model list omits the model. */
  pinned: boolean;
  health: RouteHealth;
  /** For logs: the public id and the route's position, never the upstream's name or host. */
  label: string;
}

export interface PlannedRoute {
  route: Route;
  /** Send the upstream's priority hint (a turbo request on a standard route). */
  hinted: boolean;
}

export interface RouteRegistry {
  /** Candidate routes for a public chat model id in the order to try them; empty when none is usable. */
  plan(publicId: string, tier: "default" | "priority"): PlannedRoute[];
  /** At least one route is configured (the model is live), whatever its health. */
  hasRoute(publicId: string): boolean;
  /** Routes are configured, but no upstream lists the model (nor is a route pinned): it is not served here. */
  unlisted?(publicId: string): boolean;
  /** Every served route of these models with its breaker state, for the operator (never for clients). */
  snapshot?(publicIds: string[]): RouteStatus[];
  /** A model's served routes (shared objects: read their health, change nothing). */
  servedRoutes?(publicId: string): Route[];
  /** Moves whenever any route's breaker shows something else (state or failures); time alone turns an open one half-open (RouteHealth.openUntil). */
  healthVersion?(): number;
  /** One served route of a model by its label (as snapshot() names it), for the operator's route test. */
  routeNamed?(publicId: string, label: string): Route | null;
  /** Every configured upstream (the default one included), for the model-list refresh. */
  upstreams?(): Upstream[];
  /** Public ids that some route serves and what the upstream lists about them (they may lack a catalog entry). */
  offered?(): OfferedModel[];
  /** Moves whenever offered() may answer differently. */
  offeredVersion?(): string;
  /** Replaces the upstreams and routes written live (admin API, CLI), checked by their writer. */
  setLive?(live: LiveRoutes): void;
  /** Every model with configured routes and where they come from, for the operator (never for clients). */
  configured?(): ConfiguredRoutes[];
  /** A model's configured routes, in their written order (served or not, healthy or not). */
  routesFor?(publicId: string): Route[];
  /** An upstream by name (live ones first), or null. */
  upstreamNamed?(name: string): Upstream | null;
}

/** Upstreams and per-model routes written live; a model named here ignores the file's routes for it. */
export interface LiveRoutes {
  upstreams: Map<string, Upstream>;
  models: Map<string, RouteSpec[]>;
}

export interface ConfiguredRoutes {
  model: string;
  /** "admin": written live; "file": SWITCHYARD_ROUTES; "default": SWITCHYARD_UPSTREAM_URL. */
  source: "admin" | "file" | "default";
  routes: { upstream: string; model: string; weight: number; priority: boolean; pinned: boolean }[];
}


/** One route as the operator view shows it: the upstream's configured name, never its address. */
export interface RouteStatus {
  model: string;
  route: string;
  upstream: string;
  upstreamModel: string;
  weight: number;
  priority: boolean;
  state: BreakerState;
  failures: number;
}

const CANNOT_READ = "cannot read the routes file";

export class ConfiguredRouteRegistry implements RouteRegistry {
  private table: RoutesTable | null = null;
  private readonly defaultUpstream: Upstream | null;
  private readonly policy: BreakerPolicy = { ...DEFAULT_BREAKER, changes: { count: 0 } };
  private readonly health = new Map<string, RouteHealth>();
  private readonly routeCache = new Map<string, Route[]>();
  private readonly document: ConfigDocument | null;
  private tableVersion = 0;
  private listsSeen = 0;
  private live: LiveRoutes = { upstreams: new Map(), models: new Map() };
  private get keepAlive(): boolean {
    return this.source.upstreamKeepAlive ?? true;
  }

  /** Throws RoutesConfigError when the routes are invalid (start-up turns it into ConfigError). */
  constructor(
    private readonly source: { upstreamUrl: string | null; upstreamKey: string | null; routes: string | null; upstreamKeepAlive?: boolean; proxies?: ProxySettings },
    private readonly onReloadError: (message: string) => void = () => {},
    private readonly env: Record<string, string | undefined> = process.env,
    /** What each upstream lists (refreshed by the caller); a fresh one knows nothing, so every route is served. */
    readonly lists: UpstreamModelLists = new UpstreamModelLists(),
  ) {
    this.defaultUpstream = source.upstreamUrl
      ? {
          name: "default", baseUrl: source.upstreamUrl, apiKey: source.upstreamKey, ...DEFAULT_TIMEOUTS, priorityHint: DEFAULT_PRIORITY_HINT, keepAlive: this.keepAlive,
          proxy: source.proxies ? proxyFor(source.proxies, source.upstreamUrl) : null, tls: null,
        }
      : null;
    this.document = source.routes === null ? null : new ConfigDocument(source.routes);
  }

  /**
   * Reads SWITCHYARD_ROUTES (a file and the TLS files it names, off the event loop); throws
   * RoutesConfigError when it is invalid. Called once, before the registry serves.
   */
  async load(): Promise<this> {
    if (this.document) this.apply(await this.document.load((text) => this.parse(text), (why) => new RoutesConfigError(`${CANNOT_READ} (${why})`)));
    return this;
  }

  private parse(text: string): Promise<RoutesTable> {
    return loadRoutes(text, this.env, { keepAlive: this.keepAlive, proxies: this.source.proxies });
  }

  private apply(table: RoutesTable): void {
    this.table = table;
    this.tableVersion++;
    this.policy.failures = table.breaker.failures;
    this.policy.cooldownMs = table.breaker.cooldownMs;
    this.policy.changes!.count++;
    this.routeCache.clear();
  }

  /** Checks the file for a change, in the background; a broken edit keeps the last good routes serving. */
  private refresh(): void {
    this.document?.reloadInBackground((text) => this.parse(text), (next) => this.apply(next), (err) => {
      const why = err instanceof RoutesConfigError ? err.message : `${CANNOT_READ} (${unreadable(err)})`;
      this.onReloadError(`SWITCHYARD_ROUTES: reload failed, keeping the previous routes: ${why}`);
    });
  }

  private routesOf(publicId: string): Route[] {
    this.refresh();
    if (this.lists.version !== this.listsSeen) this.forgetUnlisted();
    const cached = this.routeCache.get(publicId);
    if (cached) return cached;
    const specs = this.live.models.get(publicId) ?? this.table?.models.get(publicId);
    let routes: Route[];
    if (specs) {
      routes = [];
      specs.forEach((spec, i) => {
        // A live route may name an upstream removed since (the writer refuses that; a file reload may not).
        const upstream = this.upstreamNamed(spec.upstream);
        if (upstream) routes.push(this.route(publicId, i, upstream, spec.model, spec.weight, spec.priority, spec.pinned));
      });
    } else if (this.defaultUpstream) {
      routes = [this.route(publicId, 0, this.defaultUpstream, publicId, 1, false, false)];
    } else routes = [];
    this.routeCache.set(publicId, routes);
    return routes;
  }

  /**
   * The upstreams' lists moved: routes of models an upstream stopped listing would otherwise be
   * kept forever (a list that keeps changing would grow these maps without end). Routes are
   * rebuilt as they are asked for; only breakers with something to remember are kept.
   */
  private forgetUnlisted(): void {
    this.listsSeen = this.lists.version;
    this.routeCache.clear();
    for (const [key, health] of this.health) if (health.pristine()) this.health.delete(key);
  }

  private route(publicId: string, index: number, upstream: Upstream, model: string, weight: number, priority: boolean, pinned: boolean): Route {
    const key = JSON.stringify([publicId, upstream.name, upstream.baseUrl, model]);
    let health = this.health.get(key);
    if (!health) this.health.set(key, (health = new RouteHealth(this.policy)));
    return { upstream, model, weight, priority, pinned, health, label: `${publicId}#${index}` };
  }

  /** Pinned, or its upstream lists the model, or its upstream never answered a whole list. */
  private served(route: Route): boolean {
    if (route.pinned) return true;
    const list = this.lists.of(route.upstream);
    return list === null || !list.complete || list.models.has(route.model);
  }

  servedRoutes(publicId: string): Route[] {
    const routes = this.routesOf(publicId);
    return routes.every((r) => this.served(r)) ? routes : routes.filter((r) => this.served(r));
  }

  healthVersion(): number {
    return this.policy.changes!.count;
  }

  plan(publicId: string, tier: "default" | "priority"): PlannedRoute[] {
    const now = Date.now();
    return planRoutes(this.servedRoutes(publicId), tier).filter((p) => p.route.health.available(now));
  }

  hasRoute(publicId: string): boolean {
    return this.routesOf(publicId).some((r) => this.served(r));
  }

  unlisted(publicId: string): boolean {
    const routes = this.routesOf(publicId);
    return routes.length > 0 && !routes.some((r) => this.served(r));
  }

  upstreams(): Upstream[] {
    this.refresh();
    const byName = new Map(this.table?.upstreams ?? []);
    for (const [name, u] of this.live.upstreams) byName.set(name, u);
    const all = [...byName.values()];
    return this.defaultUpstream ? [this.defaultUpstream, ...all] : all;
  }

  upstreamNamed(name: string): Upstream | null {
    this.refresh();
    if (name === "default" && this.defaultUpstream) return this.defaultUpstream;
    return this.live.upstreams.get(name) ?? this.table?.upstreams.get(name) ?? null;
  }

  setLive(live: LiveRoutes): void {
    this.live = live;
    this.tableVersion++;
    this.routeCache.clear();
  }

  routesFor(publicId: string): Route[] {
    return this.routesOf(publicId);
  }

  configured(): ConfiguredRoutes[] {
    this.refresh();
    const view = (specs: RouteSpec[]) => specs.map((r) => ({ upstream: r.upstream, model: r.model, weight: r.weight, priority: r.priority, pinned: r.pinned }));
    const out = new Map<string, ConfiguredRoutes>();
    for (const [model, specs] of this.table?.models ?? []) out.set(model, { model, source: "file", routes: view(specs) });
    for (const [model, specs] of this.live.models) out.set(model, { model, source: "admin", routes: view(specs) });
    return [...out.values()].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  }

  offeredVersion(): string {
    this.refresh();
    return `${this.tableVersion}:${this.lists.version}`;
  }

  offered(): OfferedModel[] {
    this.refresh();
    const out: OfferedModel[] = [];
    const named = new Map([...(this.table?.models ?? []), ...this.live.models]);
    for (const id of named.keys()) {
      const route = this.servedRoutes(id)[0];
      if (!route) continue;
      const listed = this.lists.of(route.upstream)?.models.get(route.model);
      out.push({ id, ownedBy: listed?.ownedBy ?? null, created: listed?.created ?? null, maxModelLen: listed?.maxModelLen ?? null });
    }
    if (this.defaultUpstream) {
      // The default upstream's own ids become public ones: only those within the id rule.
      for (const m of this.lists.of(this.defaultUpstream)?.models.values() ?? []) {
        if (!named.has(m.id) && isModelId(m.id)) out.push({ id: m.id, ownedBy: m.ownedBy, created: m.created, maxModelLen: m.maxModelLen });
      }
    }
    return out;
  }

  routeNamed(publicId: string, label: string): Route | null {
    return this.servedRoutes(publicId).find((r) => r.label === label) ?? null;
  }

  snapshot(publicIds: string[]): RouteStatus[] {
    const now = Date.now();
    return publicIds.flatMap((id) =>
      this.servedRoutes(id).map((r) => ({
        model: id, route: r.label, upstream: r.upstream.name, upstreamModel: r.model, weight: r.weight, priority: r.priority,
        state: r.health.state(now), failures: r.health.failures,
      })),
    );
  }
}

/** The registry start-up builds; an invalid SWITCHYARD_ROUTES stops start-up naming the variable. */
export async function createRouteRegistry(
  config: Pick<Config, "upstreamUrl" | "upstreamKey" | "routes" | "upstreamKeepAlive" | "proxies">,
  onReloadError: (message: string) => void = () => {},
  lists?: UpstreamModelLists,
): Promise<ConfiguredRouteRegistry> {
  try {
    return await new ConfiguredRouteRegistry(config, onReloadError, process.env, lists).load();
  } catch (err) {
    if (err instanceof RoutesConfigError) throw new ConfigError("SWITCHYARD_ROUTES", err.message);
    throw err;
  }
}
