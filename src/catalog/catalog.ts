/**
 * The model catalog (README, "The model catalog"): public ids, labs, context windows, prices and turbo flags.
 * The default catalog is embedded in the binary (a JSON import); SWITCHYARD_CATALOG may replace
 * or extend it, and is re-read (off the event loop, in the background) when the file changes so
 * new models go live without a restart.
 * Entries written through the admin API or the CLI lie over both (live-config.ts; docs/operate.md,
 * "Managing models, prices and routes live"). Chat models an upstream serves that the catalog
 * lacks join it at the default price, when one is set (discovered.ts; README, "Serve your own model").
 */
import embedded from "./catalog.json" with { type: "json" };
import { parseUsd, PRIORITY, STANDARD, type Multiplier } from "../billing/money";
import { ConfigDocument, unreadable } from "../config-document";
import { CatalogError, parseCatalog, type CatalogEntryJson } from "./catalog-format";
import { isModelId } from "./catalog-bounds";
import { discoveredEntry, type DiscoverySettings, type OfferedSource } from "./discovered";
import { ENDPOINT_OF_KIND, OUTPUT_CEILING, TURBO_SUFFIX, type ModelEntry, type ModelKind } from "./model-entry";

export { CatalogError, parseCatalog, type CatalogEntryJson };
export { ENDPOINT_OF_KIND, OUTPUT_CEILING, TURBO_SUFFIX, type ModelEntry, type ModelKind };

export type ServiceTier = "default" | "priority";

/** Shared between requests (Catalog.resolve caches them): read-only. */
export interface ResolvedModel {
  readonly entry: ModelEntry;
  /** The id the client sent (base id or base id + "-turbo"). */
  readonly requestedId: string;
  readonly tier: ServiceTier;
  readonly multiplier: Multiplier;
}

function toEntry(j: CatalogEntryJson): ModelEntry {
  const p = (v: string | undefined) => (v === undefined ? 0 : parseUsd(v));
  return {
    id: j.id,
    kind: j.kind,
    ownedBy: j.owned_by,
    created: j.created ?? 0,
    // parseCatalog requires it of chat and embedding models; speech models have none.
    contextWindow: j.context_window ?? 0,
    maxOutputTokens: Math.min(j.max_output_tokens ?? OUTPUT_CEILING, OUTPUT_CEILING),
    dimensions: j.dimensions ?? null,
    turbo: j.turbo ?? false,
    inputModalities: j.input_modalities ?? ["text"],
    prices: {
      inputPerMillion: p(j.pricing.input_per_million),
      outputPerMillion: p(j.pricing.output_per_million),
      charactersPerMillion: p(j.pricing.characters_per_million),
      ...(j.pricing.cached_input_per_million !== undefined ? { cachedInputPerMillion: parseUsd(j.pricing.cached_input_per_million) } : {}),
      ...(j.pricing.cache_write_per_million !== undefined ? { cacheWritePerMillion: parseUsd(j.pricing.cache_write_per_million) } : {}),
    },
    pricingJson: j.pricing,
  };
}

/** Which layer an entry comes from (docs/operate.md, "Managing models, prices and routes live"). */
export type CatalogSource = "embedded" | "file" | "admin";

export interface CatalogDocument {
  json: CatalogEntryJson;
  source: CatalogSource;
}

/** SWITCHYARD_CATALOG's entries, and whether they replace the embedded catalog. */
interface FileEntries {
  replace: boolean;
  entries: CatalogEntryJson[];
}

export class Catalog {
  private entries = new Map<string, ModelEntry>();
  /** resolve() answers for this catalog version, without and with the priority hint (shared, read-only). */
  private resolvedDefault = new Map<string, ResolvedModel>();
  private resolvedPriority = new Map<string, ResolvedModel>();
  /** SWITCHYARD_CATALOG, when set. */
  private document: ConfigDocument | null = null;
  /** Upstream-offered models the catalog lacks, for offered version `discoveredAt`. */
  private discovered = new Map<string, ModelEntry>();
  private discoveredAt: string | null = null;
  private fileEntries: FileEntries = { replace: false, entries: [] };
  private live: CatalogEntryJson[] = [];
  private documents = new Map<string, CatalogDocument>();
  /** Ids no upstream may take (written ones, disabled included, and the local models'), without the turbo suffix. */
  private reserved = new Set<string>();
  private changes = 0;

  /**
   * A catalog with SWITCHYARD_CATALOG given inline (or none); throws CatalogError when it is
   * invalid. A file is read with Catalog.open.
   */
  constructor(
    override: string | null = null,
    private readonly offered: OfferedSource | null = null,
    private readonly discovery: DiscoverySettings = { defaultPrice: null, defaultContextWindow: 32768 },
  ) {
    this.document = override === null ? null : new ConfigDocument(override);
    if (override !== null && this.document!.path === null) this.fileEntries = this.parseOverride(override);
    this.compose();
  }

  /** The catalog of SWITCHYARD_CATALOG (inline, or a file read off the event loop); throws CatalogError naming the variable. */
  static async open(override: string | null, offered: OfferedSource | null = null, discovery?: DiscoverySettings): Promise<Catalog> {
    const catalog = new Catalog(override, offered, discovery);
    if (catalog.document?.path) {
      catalog.applyFile(await catalog.document.load((text) => catalog.parseOverride(text), (why) => new CatalogError(`SWITCHYARD_CATALOG: cannot read ${override} (${why})`)));
    }
    return catalog;
  }

  /**
   * Moves whenever all(), get() or resolve() may answer differently (a catalog layer or the
   * offered models changed): what is computed from the whole list is computed once per version.
   */
  version(): number {
    this.refresh();
    this.refreshDiscovered();
    return this.changes;
  }

  /** Whether an upstream's id would shadow the catalog: a written id, a local model's, or either's turbo id. */
  private shadows(id: string): boolean {
    if (this.reserved.has(id)) return true;
    return id.endsWith(TURBO_SUFFIX) && this.reserved.has(id.slice(0, -TURBO_SUFFIX.length));
  }

  /**
   * Rebuilds the discovered entries when the offered models changed: one pass over them. An id
   * outside the id rule, or one that would shadow the catalog, is never offered: the catalog wins.
   */
  private refreshDiscovered(): void {
    if (this.offered === null || this.discovery.defaultPrice === null) return;
    const version = this.offered.version();
    if (version === this.discoveredAt) return;
    const next = new Map<string, ModelEntry>();
    for (const m of this.offered.models()) {
      if (next.has(m.id) || this.shadows(m.id) || !isModelId(m.id)) continue;
      next.set(m.id, discoveredEntry(m, this.discovery));
    }
    this.discovered = next;
    this.discoveredAt = version;
    this.changes++;
    this.resolvedDefault = new Map();
    this.resolvedPriority = new Map();
  }

  /** Checks the override file for a change, in the background (config-document.ts); a broken edit keeps the last good catalog serving. */
  private refresh(): void {
    this.document?.reloadInBackground(
      (text) => this.parseOverride(text),
      (next) => this.applyFile(next),
      (err) => console.error(JSON.stringify({ level: "error", msg: "catalog reload failed", error: err instanceof CatalogError ? err.message : `SWITCHYARD_CATALOG: cannot read the file (${unreadable(err)})` })),
    );
  }

  /** Lays a new SWITCHYARD_CATALOG over the others; throws (keeping the previous one) when the result is invalid. */
  private applyFile(next: FileEntries): void {
    const previous = this.fileEntries;
    this.fileEntries = next;
    try {
      this.compose();
    } catch (e) {
      this.fileEntries = previous;
      throw e;
    }
  }

  private parseOverride(text: string): FileEntries {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new CatalogError("SWITCHYARD_CATALOG: is not valid JSON");
    }
    const replace = (json as { replace?: boolean })?.replace === true;
    return { replace, entries: parseCatalog({ models: (json as { models?: unknown }).models }, "SWITCHYARD_CATALOG") };
  }

  /**
   * The layers, later ones winning per id: the embedded catalog, SWITCHYARD_CATALOG, then the
   * entries written live (admin API, CLI; docs/operate.md, "Managing models, prices and routes live").
   * Every entry is a new object: a request keeps the one it resolved, and with it its prices.
   */
  private compose(): void {
    const merged = new Map<string, CatalogDocument>();
    const builtIn = parseCatalog(embedded, "embedded catalog");
    if (!this.fileEntries.replace) for (const e of builtIn) merged.set(e.id, { json: e, source: "embedded" });
    for (const e of this.fileEntries.entries) merged.set(e.id, { json: e, source: "file" });
    for (const e of this.live) merged.set(e.id, { json: e, source: "admin" });
    const next = new Map<string, ModelEntry>();
    for (const { json: e } of merged.values()) {
      if (e.enabled === false) continue;
      if (e.id.endsWith(TURBO_SUFFIX)) throw new CatalogError(`catalog: id '${e.id}' may not end in ${TURBO_SUFFIX}: that suffix asks for a model's priority tier; write the base id with "turbo": true`);
      next.set(e.id, toEntry(e));
    }
    this.documents = merged;
    this.entries = next;
    // Local models keep their ids even when a catalog replaces or disables them.
    this.reserved = new Set([...merged.keys(), ...builtIn.filter((e) => e.kind !== "chat").map((e) => e.id)]);
    this.changes++;
    this.discoveredAt = null;
    this.resolvedDefault = new Map();
    this.resolvedPriority = new Map();
  }

  /** Replaces the live layer (entries already checked with parseCatalog; disabled ones included). */
  setLive(entries: CatalogEntryJson[]): void {
    this.live = entries;
    this.compose();
  }

  /** Every entry of every layer as written, disabled ones included, with the layer that won. */
  written(): CatalogDocument[] {
    this.refresh();
    return [...this.documents.values()];
  }

  /** One id's written entry and its layer, disabled or not. */
  writtenEntry(id: string): CatalogDocument | undefined {
    this.refresh();
    return this.documents.get(id);
  }

  all(): ModelEntry[] {
    this.refresh();
    this.refreshDiscovered();
    return this.discovered.size === 0 ? [...this.entries.values()] : [...this.entries.values(), ...this.discovered.values()];
  }

  get(id: string): ModelEntry | undefined {
    this.refresh();
    this.refreshDiscovered();
    return this.entries.get(id) ?? this.discovered.get(id);
  }

  /**
   * Maps a requested id to its entry and tier. `-turbo` is valid only on turbo-capable models;
   * `service_tier: "priority"` on a model without turbo is served at the standard tier.
   */
  resolve(requestedId: string, priorityHint = false): ResolvedModel | null {
    this.refresh();
    this.refreshDiscovered();
    // Every chat request resolves its model two or three times: the answers are kept per catalog
    // version (compose() starts a new map), and only for ids that exist, so the map stays bounded.
    const cache = priorityHint ? this.resolvedPriority : this.resolvedDefault;
    const hit = cache.get(requestedId);
    if (hit) return hit;
    const resolved = this.resolveUncached(requestedId, priorityHint);
    if (resolved) cache.set(requestedId, resolved);
    return resolved;
  }

  private resolveUncached(requestedId: string, priorityHint: boolean): ResolvedModel | null {
    const direct = this.entries.get(requestedId) ?? this.discovered.get(requestedId);
    if (direct) {
      const priority = priorityHint && direct.turbo;
      return { entry: direct, requestedId, tier: priority ? "priority" : "default", multiplier: priority ? PRIORITY : STANDARD };
    }
    if (requestedId.endsWith(TURBO_SUFFIX)) {
      const base = this.entries.get(requestedId.slice(0, -TURBO_SUFFIX.length));
      if (base?.turbo) return { entry: base, requestedId, tier: "priority", multiplier: PRIORITY };
    }
    return null;
  }
}
