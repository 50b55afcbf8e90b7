/**
 * The models, upstreams and routes written live (admin API, `switchyard catalog|routes`), read
 * from the store and laid over the files and the embedded catalog (docs/operate.md, "Managing models,
 * prices and routes live"). A server reloads them after its own writes, when PostgreSQL notifies
 * a change made by another instance or the CLI, and when the store's version moved (polled every
 * SWITCHYARD_LIVE_CONFIG_POLL_SECONDS, which also catches the CLI writing a SQLite database).
 * A row that no longer checks (a TLS file gone, an environment changed) is skipped and logged;
 * the rest keep serving.
 */
import type { Catalog } from "./catalog";
import { parseCatalog, type CatalogEntryJson } from "./catalog-format";
import type { LiveConfigRecords, LiveRow } from "./live-records";
import type { LiveRoutes, RouteRegistry, Upstream } from "../upstream/registry";
import { loadRoutes, RoutesConfigError, type RouteSpec, type RoutesJson } from "../upstream/routes-config";
import type { ProxySettings } from "../upstream/proxy";

export type UpstreamDocument = RoutesJson["upstreams"][string];
export type RouteDocument = RoutesJson["models"][string][number];

export interface LiveDocuments {
  models: Map<string, CatalogEntryJson>;
  upstreams: Map<string, UpstreamDocument>;
  routes: Map<string, RouteDocument[]>;
  /** Unix seconds of each row's last write, by "kind:id". */
  updatedAt: Map<string, number>;
}

export interface UpstreamDefaults {
  keepAlive: boolean;
  proxies?: ProxySettings;
  env?: Record<string, string | undefined>;
}

/**
 * The only environment variables an upstream written live may take its key from (`key_env`):
 * an admin API caller must not be able to have the server send any of its environment (say
 * AWS_SECRET_ACCESS_KEY) to a host of their choosing. SWITCHYARD_ROUTES, written by whoever sets
 * the environment, may name any variable.
 */
export const LIVE_KEY_ENV_PREFIX = "SWITCHYARD_UPSTREAM_KEY_";

/**
 * One upstream document checked and resolved as SWITCHYARD_ROUTES would (its TLS files read off
 * the event loop), with `api_key_env` limited to LIVE_KEY_ENV_PREFIX; throws RoutesConfigError.
 */
export async function upstreamSpec(name: string, doc: UpstreamDocument, defaults: UpstreamDefaults): Promise<Upstream> {
  const table = await loadRoutes(JSON.stringify({ upstreams: { [name]: doc }, models: {} }), defaults.env ?? process.env, { ...defaults, keyEnvPrefix: LIVE_KEY_ENV_PREFIX });
  return table.upstreams.get(name)!;
}

export function routeSpec(publicId: string, r: RouteDocument): RouteSpec {
  return { upstream: r.upstream, model: r.model ?? publicId, weight: r.weight ?? 1, priority: r.priority ?? false, pinned: r.pinned ?? false };
}

export class LiveConfig {
  private docs: LiveDocuments = { models: new Map(), upstreams: new Map(), routes: new Map(), updatedAt: new Map() };
  private seenVersion = -1;
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    readonly records: LiveConfigRecords,
    private readonly catalog: Catalog,
    private readonly routes: RouteRegistry,
    private readonly defaults: UpstreamDefaults,
    private readonly warn: (message: string, fields: Record<string, unknown>) => void,
  ) {}

  /** What is written now, as last loaded. */
  documents(): LiveDocuments {
    return this.docs;
  }

  /** Reads every row and applies them; concurrent calls coalesce into one more read. */
  reload(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          const version = await this.records.version();
          await this.apply(await this.records.list());
          this.seenVersion = version;
        } while (this.again);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  /** Reloads when the store's version moved since the last load. */
  async poll(): Promise<void> {
    if ((await this.records.version()) !== this.seenVersion) await this.reload();
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      this.poll().catch((e) => this.warn("cannot read the live catalog from the store; the last one keeps serving", { error: String((e as Error)?.message ?? e).slice(0, 200) }));
    }, intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async apply(rows: LiveRow[]): Promise<void> {
    const docs: LiveDocuments = { models: new Map(), upstreams: new Map(), routes: new Map(), updatedAt: new Map() };
    const live: LiveRoutes = { upstreams: new Map(), models: new Map() };
    const skip = (row: LiveRow, why: string) => this.warn("a live catalog entry is not valid any more and is skipped", { kind: row.kind, id: row.id, error: why.slice(0, 300) });
    for (const row of rows) {
      let body: unknown;
      try {
        body = JSON.parse(row.body);
      } catch {
        skip(row, "not JSON");
        continue;
      }
      try {
        if (row.kind === "model") {
          const [entry] = parseCatalog({ models: [body] }, "live catalog");
          docs.models.set(row.id, entry!);
        } else if (row.kind === "upstream") {
          live.upstreams.set(row.id, await upstreamSpec(row.id, body as UpstreamDocument, this.defaults));
          docs.upstreams.set(row.id, body as UpstreamDocument);
        } else {
          const list = body as RouteDocument[];
          docs.routes.set(row.id, list);
          live.models.set(row.id, list.map((r) => routeSpec(row.id, r)));
        }
        docs.updatedAt.set(`${row.kind}:${row.id}`, row.updatedAt);
      } catch (e) {
        skip(row, e instanceof RoutesConfigError ? e.message : String((e as Error)?.message ?? e));
      }
    }
    this.catalog.setLive([...docs.models.values()]);
    this.routes.setLive?.(live);
    this.docs = docs;
  }
}
