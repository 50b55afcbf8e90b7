/**
 * Managing models, prices, upstreams and routes live (docs/operate.md, "Managing models, prices and routes
 * live"): the operations behind both the admin API (/admin/models, /admin/upstreams,
 * /admin/routes) and the CLI (`switchyard catalog|routes`), so the two never disagree. Each write
 * is checked here with a named rule, stored, then reloaded (other instances hear of it through the
 * store). An upstream's key is write-only: views say `has_key`, never the key.
 */
import type { Config } from "../config";
import type { RouteRegistry } from "../upstream/registry";
import { badRequest, invalidField, notFound } from "../errors";
import { formatUsd, MoneyFormatError, parseUsd, usdNumber } from "../billing/money";
import { CatalogEntryError, PRICE_FIELDS, parseEntry, type CatalogEntryJson } from "./catalog-format";
import { isModelId } from "./catalog-bounds";
import { TURBO_SUFFIX, type Catalog, type ModelEntry } from "./catalog";
import { upstreamSpec, type LiveConfig, type RouteDocument, type UpstreamDocument } from "./live-config";
import { isUpstreamModel, RoutesConfigError, UPSTREAM_MODEL_MAX } from "../upstream/routes-config";
import { nowSeconds } from "../accounts/accounts";

type Json = Record<string, unknown>;
const UPSTREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$/;

function object(body: unknown, what = "body"): Json {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw invalidField(what, "must be a JSON object");
  return body as Json;
}

/** Prices as numbers or decimal strings become the catalog's decimal strings. */
function normalizePricing(pricing: unknown): unknown {
  if (pricing === null || typeof pricing !== "object" || Array.isArray(pricing)) return pricing;
  const out: Json = { ...(pricing as Json) };
  for (const k of PRICE_FIELDS) {
    const v = out[k];
    if (v === undefined) continue;
    if (typeof v !== "number" && typeof v !== "string") throw invalidField(`pricing.${k}`, "must be USD per million as a number or a decimal string, e.g. 0.2 or \"0.20\"");
    let units: number;
    try {
      units = parseUsd(v);
    } catch (e) {
      if (e instanceof MoneyFormatError) throw invalidField(`pricing.${k}`, "must be USD per million as a number or a decimal string with at most 9 decimals, e.g. 0.2 or \"0.20\"");
      throw e;
    }
    if (units < 0) throw invalidField(`pricing.${k}`, "must not be negative");
    out[k] = formatUsd(units);
  }
  return out;
}

/** What GET shows beside the entry's own fields: a body copied from a GET may carry them back. */
const VIEW_ONLY = ["object", "source", "live", "updated_at"];

function checkedEntry(raw: Json): CatalogEntryJson {
  const doc: Json = { ...raw, ...(raw.pricing !== undefined ? { pricing: normalizePricing(raw.pricing) } : {}) };
  for (const k of VIEW_ONLY) delete doc[k];
  // null on an optional field (as GET shows a missing one): the field is left out.
  for (const [k, v] of Object.entries(doc)) if (v === null && k !== "pricing") delete doc[k];
  let entry: CatalogEntryJson;
  try {
    entry = parseEntry(doc);
  } catch (e) {
    if (e instanceof CatalogEntryError) throw badRequest(e.field, e.message, "invalid_value");
    throw e;
  }
  if (entry.id.endsWith(TURBO_SUFFIX)) throw invalidField("id", `must not end in ${TURBO_SUFFIX} (that suffix asks for a model's priority tier): write the base id with "turbo": true`);
  return entry;
}

function pricingView(p: CatalogEntryJson["pricing"]): Json {
  const out: Json = {};
  for (const k of PRICE_FIELDS) if (p[k] !== undefined) out[k] = usdNumber(parseUsd(p[k]!));
  return out;
}

/** A discovered entry (an upstream's own model at the default price) written as a catalog entry. */
function jsonOf(e: ModelEntry): CatalogEntryJson {
  return {
    id: e.id, kind: e.kind, owned_by: e.ownedBy, created: e.created, context_window: e.contextWindow, max_output_tokens: e.maxOutputTokens,
    turbo: e.turbo, input_modalities: e.inputModalities, pricing: e.pricingJson,
  };
}

/** The id in a path: ids may hold slashes, sent as they are or percent-encoded. */
export function pathId(raw: string, what: string): string {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw invalidField(what, "is not a valid percent-encoded id");
  }
  return id;
}

/** What managing the catalog live uses: the catalog and routes as they are, the live layer that writes, and the upstream settings. */
export interface LiveCatalogDeps {
  catalog: Catalog;
  routes: RouteRegistry;
  liveConfig: LiveConfig;
  config: Pick<Config, "upstreamUrl" | "upstreamKeepAlive" | "proxies">;
  isLive(entry: ModelEntry): boolean;
}

export class LiveCatalogAdmin {
  constructor(private readonly s: LiveCatalogDeps) {}

  private get live(): LiveConfig {
    return this.s.liveConfig;
  }

  private async write(kind: "model" | "upstream" | "route", id: string, body: unknown): Promise<void> {
    await this.live.records.put(kind, id, JSON.stringify(body), nowSeconds());
    await this.live.reload();
  }

  private async drop(kind: "model" | "upstream" | "route", id: string): Promise<boolean> {
    const removed = await this.live.records.remove(kind, id);
    await this.live.reload();
    return removed;
  }

  // ---- models -------------------------------------------------------------------------------

  private modelView(json: CatalogEntryJson, source: string): Json {
    const entry = this.s.catalog.get(json.id);
    return {
      id: json.id,
      object: "catalog_entry",
      kind: json.kind,
      owned_by: json.owned_by,
      created: json.created ?? 0,
      context_window: json.context_window ?? null,
      max_output_tokens: json.max_output_tokens ?? null,
      ...(json.dimensions !== undefined ? { dimensions: json.dimensions } : {}),
      turbo: json.turbo ?? false,
      input_modalities: json.input_modalities ?? ["text"],
      pricing: pricingView(json.pricing),
      enabled: json.enabled !== false,
      source,
      /** Listed in GET /v1/models now (enabled, and routed or loaded). */
      live: entry !== undefined && json.enabled !== false && this.s.isLive(entry),
      updated_at: this.live.documents().updatedAt.get(`model:${json.id}`) ?? null,
    };
  }

  listModels(): Json {
    const written = this.s.catalog.written();
    const ids = new Set(written.map((d) => d.json.id));
    const data = written.map((d) => this.modelView(d.json, d.source));
    for (const e of this.s.catalog.all()) if (e.discovered && !ids.has(e.id)) data.push(this.modelView(jsonOf(e), "discovered"));
    data.sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1));
    return { object: "list", data };
  }

  getModel(id: string): Json {
    const doc = this.s.catalog.writtenEntry(id);
    if (doc) return this.modelView(doc.json, doc.source);
    const e = this.s.catalog.get(id);
    if (e?.discovered) return this.modelView(jsonOf(e), "discovered");
    throw notFound(`No catalog entry '${id}'.`);
  }

  /** A new entry (or an override of a file or embedded one); an id already written live: use PATCH. */
  async createModel(body: unknown): Promise<Json> {
    const entry = checkedEntry(object(body));
    if (this.live.documents().models.has(entry.id)) throw invalidField("id", `'${entry.id}' is already written; change it with PATCH /admin/models/${entry.id}`);
    await this.write("model", entry.id, entry);
    return this.getModel(entry.id);
  }

  /** Changes some fields (pricing merges per price); an entry of a file, the embedded catalog or an upstream becomes a live override. */
  async updateModel(id: string, body: unknown): Promise<Json> {
    const patch = object(body);
    if (patch.id !== undefined && patch.id !== id) throw invalidField("id", "cannot be changed; create a new entry and disable this one");
    const base = this.live.documents().models.get(id) ?? this.s.catalog.writtenEntry(id)?.json ?? (this.s.catalog.get(id)?.discovered ? jsonOf(this.s.catalog.get(id)!) : undefined);
    if (!base) throw notFound(`No catalog entry '${id}'; create it with POST /admin/models.`);
    const pricing = patch.pricing === undefined ? base.pricing : { ...base.pricing, ...(normalizePricing(object(patch.pricing, "pricing")) as Json) };
    const entry = checkedEntry({ ...base, ...patch, id, pricing });
    await this.write("model", id, entry);
    return this.getModel(id);
  }

  /** Removes the live entry: the file's or the embedded entry (if any) serves again. */
  async deleteModel(id: string): Promise<Json> {
    if (!(await this.drop("model", id))) throw notFound(`No catalog entry '${id}' was written through the admin API (disable others with PATCH {"enabled": false}).`);
    const now = this.s.catalog.writtenEntry(id);
    return { id, object: "catalog_entry", deleted: true, source: now?.source ?? null };
  }

  // ---- upstreams ----------------------------------------------------------------------------

  private upstreamView(name: string, doc: UpstreamDocument | null, source: string): Json {
    const u = this.s.routes.upstreamNamed?.(name) ?? null;
    return {
      name,
      object: "upstream",
      source,
      base_url: doc?.base_url ?? u?.baseUrl ?? null,
      has_key: doc ? doc.api_key !== undefined || doc.api_key_env !== undefined : (u?.apiKey ?? null) !== null,
      timeouts: u ? { connect_ms: u.connectTimeoutMs, first_byte_ms: u.firstByteTimeoutMs, idle_ms: u.idleTimeoutMs } : (doc?.timeouts ?? null),
      keep_alive: u?.keepAlive ?? doc?.keep_alive ?? null,
      priority_hint: u ? u.priorityHint : (doc?.priority_hint ?? null),
      tls: doc?.tls ?? null,
      updated_at: this.live.documents().updatedAt.get(`upstream:${name}`) ?? null,
    };
  }

  listUpstreams(): Json {
    const docs = this.live.documents().upstreams;
    const data: Json[] = [];
    for (const u of this.s.routes.upstreams?.() ?? []) {
      if (docs.has(u.name)) continue;
      data.push(this.upstreamView(u.name, null, u.name === "default" && this.s.config.upstreamUrl !== null ? "env" : "file"));
    }
    for (const [name, doc] of docs) data.push(this.upstreamView(name, doc, "admin"));
    return { object: "list", data };
  }

  getUpstream(name: string): Json {
    const doc = this.live.documents().upstreams.get(name);
    if (doc) return this.upstreamView(name, doc, "admin");
    const found = (this.listUpstreams().data as Json[]).find((u) => u.name === name);
    if (!found) throw notFound(`No upstream '${name}'.`);
    return found;
  }

  /** `{name, base_url, key?, key_env?, timeouts?, keep_alive?, priority_hint?, tls?}`, checked as SWITCHYARD_ROUTES checks an upstream. */
  private async upstreamDocument(name: string, b: Json): Promise<UpstreamDocument> {
    const { key, key_env, name: _n, ...rest } = b;
    const doc: Json = { ...rest };
    if (key !== undefined && key !== null) doc.api_key = key;
    if (key_env !== undefined && key_env !== null) doc.api_key_env = key_env;
    try {
      await upstreamSpec(name, doc as UpstreamDocument, { keepAlive: this.s.config.upstreamKeepAlive ?? true, proxies: this.s.config.proxies });
    } catch (e) {
      if (e instanceof RoutesConfigError) {
        // "/upstreams/<name>/base_url: ..." → field base_url (api_key is the body's `key`).
        const m = /^\/upstreams\/[^/]+\/?([^:]*): (.*)$/.exec(e.message);
        const field = (m?.[1] || "body").replace(/^api_key_env/, "key_env").replace(/^api_key/, "key").replace(/\//g, ".");
        const rule = (m?.[2] ?? e.message).replace(/api_key_env/g, "key_env");
        throw invalidField(field, rule.replace(/\.$/, ""));
      }
      throw e;
    }
    return doc as UpstreamDocument;
  }

  async createUpstream(body: unknown): Promise<Json> {
    const b = object(body);
    if (typeof b.name !== "string" || !UPSTREAM_NAME.test(b.name)) throw invalidField("name", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
    if (b.name === "default") throw invalidField("name", "'default' is SWITCHYARD_UPSTREAM_URL's upstream; choose another name");
    if (this.live.documents().upstreams.has(b.name)) throw invalidField("name", `'${b.name}' is already written; change it with PATCH /admin/upstreams/${b.name}`);
    const doc = await this.upstreamDocument(b.name, b);
    await this.write("upstream", b.name, doc);
    return this.getUpstream(b.name);
  }

  /** Changes some fields; `key: null` removes the key. An upstream of the routes file becomes a live override (its key must be given again). */
  async updateUpstream(name: string, body: unknown): Promise<Json> {
    const b = object(body);
    if (b.name !== undefined && b.name !== name) throw invalidField("name", "cannot be changed; create a new upstream");
    const base = this.live.documents().upstreams.get(name);
    if (!base) {
      if (!this.s.routes.upstreamNamed?.(name) || name === "default") throw notFound(`No upstream '${name}' written through the admin API; create it with POST /admin/upstreams.`);
    }
    const merged: Json = { ...(base ?? {}) };
    const { key, key_env, ...rest } = b;
    Object.assign(merged, rest);
    if (key !== undefined) {
      delete merged.api_key;
      delete merged.api_key_env;
      if (key !== null) merged.api_key = key;
    }
    if (key_env !== undefined) {
      delete merged.api_key;
      delete merged.api_key_env;
      if (key_env !== null) merged.api_key_env = key_env;
    }
    for (const [k, v] of Object.entries(rest)) if (v === null) delete merged[k];
    if (merged.base_url === undefined) throw invalidField("base_url", "is required for an upstream written through the admin API");
    const { api_key, api_key_env, ...plain } = merged;
    const doc = await this.upstreamDocument(name, { ...plain, ...(api_key !== undefined ? { key: api_key } : {}), ...(api_key_env !== undefined ? { key_env: api_key_env } : {}) });
    await this.write("upstream", name, doc);
    return this.getUpstream(name);
  }

  async deleteUpstream(name: string): Promise<Json> {
    if (!this.live.documents().upstreams.has(name)) throw notFound(`No upstream '${name}' written through the admin API.`);
    // A live route must never name a missing upstream: change those routes first.
    const users = [...this.live.documents().routes].filter(([, rs]) => rs.some((r) => r.upstream === name)).map(([m]) => m);
    if (users.length > 0) throw invalidField("name", `is used by the routes of ${users.join(", ")}; change those routes first`);
    await this.drop("upstream", name);
    return { name, object: "upstream", deleted: true };
  }

  // ---- routes -------------------------------------------------------------------------------

  listRoutes(): Json {
    const snapshot = new Map((this.s.routes.snapshot?.(this.s.routes.configured?.().map((c) => c.model) ?? []) ?? []).map((r) => [`${r.model}|${r.route}`, r]));
    const data = (this.s.routes.configured?.() ?? []).map((c) => ({
      object: "model_routes",
      ...c,
      routes: c.routes.map((r, i) => {
        const st = snapshot.get(`${c.model}|${c.model}#${i}`);
        return { index: i, ...r, state: st?.state ?? "not_served", failures: st?.failures ?? 0 };
      }),
      updated_at: this.live.documents().updatedAt.get(`route:${c.model}`) ?? null,
    }));
    return { object: "list", default_upstream: this.s.config.upstreamUrl !== null, data };
  }

  getRoutes(model: string): Json {
    const found = (this.listRoutes().data as Json[]).find((r) => r.model === model);
    if (found) return found;
    if (this.s.config.upstreamUrl !== null) return { object: "model_routes", model, source: "default", routes: [{ index: 0, upstream: "default", model, weight: 1, priority: false, pinned: false }], updated_at: null };
    throw notFound(`No routes for '${model}'.`);
  }

  /** Replaces a model's live routes with `routes` ([] takes the model offline). */
  async setRoutes(model: unknown, routes: unknown): Promise<Json> {
    if (!isModelId(model)) throw invalidField("model", "must be a model id: letters, digits and . - _ : / @ +, starting with a letter or digit");
    if (!Array.isArray(routes)) throw invalidField("routes", "must be an array of {upstream, model?, weight?, priority?, pinned?}");
    if (routes.length > 64) throw invalidField("routes", "must have at most 64 routes");
    const docs: RouteDocument[] = routes.map((r, i) => {
      const at = `routes[${i}]`;
      const o = object(r, at);
      for (const k of Object.keys(o)) if (!["upstream", "model", "weight", "priority", "pinned"].includes(k)) throw invalidField(`${at}.${k}`, "is not a route field: a route has upstream, model, weight, priority, pinned");
      if (typeof o.upstream !== "string" || o.upstream === "") throw invalidField(`${at}.upstream`, "must name an upstream");
      if (!this.s.routes.upstreamNamed?.(o.upstream)) throw invalidField(`${at}.upstream`, `no upstream named '${o.upstream}' (see GET /admin/upstreams)`);
      if (o.model !== undefined && !isUpstreamModel(o.model)) throw invalidField(`${at}.model`, `must be the model name the upstream knows: 1 to ${UPSTREAM_MODEL_MAX} characters, no control characters`);
      if (o.weight !== undefined && (typeof o.weight !== "number" || !Number.isFinite(o.weight) || o.weight < 0 || o.weight > 1_000_000)) throw invalidField(`${at}.weight`, "must be a number from 0 (standby) to 1000000");
      if (o.priority !== undefined && typeof o.priority !== "boolean") throw invalidField(`${at}.priority`, "must be a boolean");
      if (o.pinned !== undefined && typeof o.pinned !== "boolean") throw invalidField(`${at}.pinned`, "must be a boolean");
      return o as RouteDocument;
    });
    await this.write("route", model, docs);
    return this.getRoutes(model);
  }

  /** Drops the model's live routes: the file's routes (or SWITCHYARD_UPSTREAM_URL) serve it again. */
  async deleteRoutes(model: string): Promise<Json> {
    if (!(await this.drop("route", model))) throw notFound(`No routes for '${model}' were written through the admin API.`);
    return { model, object: "model_routes", deleted: true };
  }
}
