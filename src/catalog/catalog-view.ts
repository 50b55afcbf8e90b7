/**
 * What is computed from the whole model list (GET /v1/models, /readyz's layout, the "did you
 * mean" candidates), computed once per version of that list rather than once per request: with
 * an upstream listing thousands of models, a pass over them per request is what made /readyz
 * take seconds. The version is the catalog's (its layers and the offered models), the routes'
 * (which chat models are served) and which local models are loaded; each is a counter or a few
 * flags, so checking it costs the same whatever the list's size.
 */
import type { Catalog, ModelEntry } from "./catalog";
import type { RouteRegistry } from "../upstream/registry";

export interface ViewSources {
  catalog: Catalog;
  isLive(entry: ModelEntry): boolean;
  /** Moves whenever which chat models have a served route may change; null: unknown, so nothing is kept. */
  routesVersion(): string | null;
}

export class CatalogView {
  private catalogVersion = -1;
  private routesVersion: string | null = null;
  private localFlags = "";
  /** Local (non-chat) entries of this catalog version: their loaded state is part of the version. */
  private locals: ModelEntry[] = [];
  private readonly memos = new Map<string, unknown>();

  constructor(private readonly sources: ViewSources) {}

  /** Drops what was computed when the list's version moved; true when it did. */
  private check(): boolean {
    const { catalog, isLive } = this.sources;
    const catalogVersion = catalog.version();
    const routesVersion = this.sources.routesVersion();
    let moved = routesVersion === null || catalogVersion !== this.catalogVersion || routesVersion !== this.routesVersion;
    if (catalogVersion !== this.catalogVersion) this.locals = catalog.all().filter((e) => e.kind !== "chat");
    let flags = "";
    for (const e of this.locals) flags += isLive(e) ? "1" : "0";
    if (flags !== this.localFlags) moved = true;
    if (moved) {
      this.memos.clear();
      this.catalogVersion = catalogVersion;
      this.routesVersion = routesVersion;
      this.localFlags = flags;
    }
    return moved;
  }

  /** A key that moves with the list's version (for callers that keep something of their own). */
  get version(): string {
    this.check();
    return `${this.catalogVersion}|${this.routesVersion}|${this.localFlags}`;
  }

  /** `compute()`'s value for the list as it is now, computed again only after the version moved. */
  memo<T>(name: string, compute: () => T): T {
    this.check();
    if (this.memos.has(name)) return this.memos.get(name) as T;
    const value = compute();
    this.memos.set(name, value);
    return value;
  }

  /** The catalog's entries and which are live, as of this version (catalog order). */
  entries(): { all: ModelEntry[]; live: ModelEntry[] } {
    return this.memo("entries", () => {
      const all = this.sources.catalog.all();
      return { all, live: all.filter((e) => this.sources.isLive(e)) };
    });
  }
}

/** What a running service's model list is: its catalog, which models are live, the routes' version. */
export interface ModelList {
  catalog: Catalog;
  routes: Pick<RouteRegistry, "offeredVersion">;
  isLive(entry: ModelEntry): boolean;
}

const views = new WeakMap<ModelList, CatalogView>();

/** The view of a running service (one per service object). */
export function catalogView(s: ModelList): CatalogView {
  let view = views.get(s);
  if (!view) {
    view = new CatalogView({
      catalog: s.catalog,
      isLive: (e) => s.isLive(e),
      routesVersion: () => s.routes.offeredVersion?.() ?? null,
    });
    views.set(s, view);
  }
  return view;
}
