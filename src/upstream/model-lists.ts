/**
 * What each upstream says it serves: its `GET /v1/models` (vLLM, SGLang, llama.cpp's server and
 * Ollama all answer it, in OpenAI's shape `{ data: [{ id, owned_by?, max_model_len? }] }`), read
 * at start and then every SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS (README, "Serve your own
 * model"). Asked over the project's HTTP/1.1 client with the upstream's key, connect timeout,
 * proxy and TLS settings. An upstream that cannot be reached, or answers anything but a list,
 * keeps its last known list; one that never answered has none, and its routes count as served.
 * Nothing from here reaches a client except model ids and the listed `owned_by`, each within the
 * catalog's rules (catalog/catalog-bounds.ts). A list is read up to SWITCHYARD_UPSTREAM_MODELS_MAX
 * ids: a longer one is known to be incomplete, and then never takes a route out of service.
 */
import { readBoundedText, request1 } from "./http1/client";
import { targetFor } from "./client";
import type { ConnectionPool } from "./http1/pool";
import { isUpstreamModel, type UpstreamSpec } from "./routes-config";
import { CONTEXT_WINDOW_MAX, CREATED_MAX, isModelId, isOwnedBy } from "../catalog/catalog-bounds";

/** One model as an upstream lists it. */
export interface ListedModel {
  id: string;
  /** The listed `owned_by`, when it is a short printable name that does not name the upstream. */
  ownedBy: string | null;
  created: number | null;
  /** vLLM's `max_model_len`: the context window the engine was started with. */
  maxModelLen: number | null;
}

/** What one upstream's list said, read within the bounds. */
export interface ModelListAnswer {
  /** At most `maxIds` of them, in the list's order. */
  models: ListedModel[];
  /** Kept ids that are not valid public ids (README, "Serve your own model"): a route may name them, discovery never offers them. */
  invalid: number;
  /** Ids past the cap, not kept: the list is incomplete. */
  overCap: number;
}

/** A model list is at most this large (a hosted API may list thousands of ids). */
const MAX_LIST_BYTES = 4 * 1024 * 1024;
/** SWITCHYARD_UPSTREAM_MODELS_MAX's default: ids kept of one upstream's list. */
export const DEFAULT_MAX_LISTED = 1000;
/** A list request may take this long in all, after connecting. */
const LIST_DEADLINE_MS = 10_000;

/** The identity of an upstream's list: its name and address (a reload keeps lists it did not change). */
export function upstreamKey(u: Pick<UpstreamSpec, "name" | "baseUrl">): string {
  return `${u.name}\u0000${u.baseUrl}`;
}

/**
 * Parses a `/models` answer, keeping at most `maxIds` ids; null when it is not an OpenAI-shaped
 * list. Linear in the list's length, and cheap past the cap (those entries are only counted).
 */
export function parseModelList(text: string, upstream: Pick<UpstreamSpec, "name" | "baseUrl">, maxIds = DEFAULT_MAX_LISTED): ModelListAnswer | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return null;
  let host = "";
  try {
    host = new URL(upstream.baseUrl).hostname.toLowerCase();
  } catch {
    // The base URL was checked at start-up.
  }
  const models: ListedModel[] = [];
  const seen = new Set<string>();
  let invalid = 0;
  let overCap = 0;
  for (const m of data) {
    const id = (m as { id?: unknown } | null)?.id;
    // An upstream's own name for a model (a route may map a public id to it): short, no control characters.
    if (!isUpstreamModel(id) || seen.has(id)) continue;
    if (models.length >= maxIds) {
      overCap++;
      continue;
    }
    seen.add(id);
    if (!isModelId(id)) invalid++;
    const o = m as { owned_by?: unknown; created?: unknown; max_model_len?: unknown };
    const owner = typeof o.owned_by === "string" ? o.owned_by.trim() : "";
    let ownedBy = isOwnedBy(owner) ? owner : null;
    // Never the upstream's configured name or host.
    if (ownedBy !== null && (ownedBy === upstream.name || (host !== "" && ownedBy.toLowerCase().includes(host)))) ownedBy = null;
    const created = Number.isSafeInteger(o.created) && (o.created as number) >= 0 && (o.created as number) <= CREATED_MAX ? (o.created as number) : null;
    const maxModelLen = Number.isSafeInteger(o.max_model_len) && (o.max_model_len as number) > 0 && (o.max_model_len as number) <= CONTEXT_WINDOW_MAX ? (o.max_model_len as number) : null;
    models.push({ id, ownedBy, created, maxModelLen });
  }
  return { models, invalid, overCap };
}

/** GET <base_url>/models; throws when the upstream cannot be reached or does not answer a list. */
export async function fetchModelList(upstream: UpstreamSpec, pool?: ConnectionPool, maxIds = DEFAULT_MAX_LISTED): Promise<ModelListAnswer> {
  const target = targetFor(upstream);
  const headers: Record<string, string> = { accept: "application/json" };
  if (upstream.apiKey) headers.authorization = `Bearer ${upstream.apiKey}`;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), upstream.connectTimeoutMs + LIST_DEADLINE_MS);
  try {
    const res = await request1({
      target, method: "GET", path: "/models", headers, body: "", signal: deadline.signal,
      connectTimeoutMs: upstream.connectTimeoutMs, pool, partition: "model-list", keepAlive: false,
    });
    if (res.status < 200 || res.status >= 300) {
      await res.body.cancel().catch(() => {});
      throw new Error(`answered ${res.status}`);
    }
    const list = parseModelList(await readBoundedText(res.body, MAX_LIST_BYTES), upstream, maxIds);
    if (list === null) throw new Error("did not answer an OpenAI-shaped model list");
    return list;
  } finally {
    clearTimeout(timer);
  }
}

/** A fetcher's answer: a plain array is a whole list with nothing dropped. */
export type ListFetcher = (upstream: UpstreamSpec) => Promise<ModelListAnswer | ListedModel[]>;

/** An upstream's last list. */
export interface KnownList {
  models: ReadonlyMap<string, ListedModel>;
  /** False when ids past the cap were left out: a model missing from it may still be served. */
  complete: boolean;
}

/** What a refresh left out of one upstream's list, reported once per refresh (never once per id). */
export type DroppedReport = (upstream: string, dropped: { invalid: number; overCap: number; kept: number }) => void;

/** The last list each upstream answered (by name and address); `version` moves when one changes. */
export class UpstreamModelLists {
  private readonly lists = new Map<string, KnownList>();
  /** Upstreams whose last attempt failed (a failure is reported once, until an answer comes). */
  private readonly failing = new Set<string>();
  private changes = 0;

  constructor(
    private readonly fetcher: ListFetcher = (u) => fetchModelList(u),
    private readonly onError: (upstream: string, why: string) => void = () => {},
    private readonly onDropped: DroppedReport = () => {},
  ) {}

  get version(): number {
    return this.changes;
  }

  /** The upstream's last list, or null when it never answered one. */
  of(upstream: Pick<UpstreamSpec, "name" | "baseUrl">): KnownList | null {
    return this.lists.get(upstreamKey(upstream)) ?? null;
  }

  /** Asks every upstream at once; one that fails keeps its last list. */
  async refresh(upstreams: UpstreamSpec[]): Promise<void> {
    await Promise.all(
      upstreams.map(async (u) => {
        try {
          const answer = await this.fetcher(u);
          const list = Array.isArray(answer) ? { models: answer, invalid: 0, overCap: 0 } : answer;
          const key = upstreamKey(u);
          this.failing.delete(key);
          if (list.invalid > 0 || list.overCap > 0) this.onDropped(u.name, { invalid: list.invalid, overCap: list.overCap, kept: list.models.length });
          const next: KnownList = { models: new Map(list.models.map((m) => [m.id, m])), complete: list.overCap === 0 };
          if (!sameList(this.lists.get(key), next)) {
            this.lists.set(key, next);
            this.changes++;
          }
        } catch (err) {
          const key = upstreamKey(u);
          if (!this.failing.has(key)) this.onError(u.name, String((err as Error)?.message ?? err).slice(0, 200));
          this.failing.add(key);
        }
      }),
    );
  }
}

function sameList(known: KnownList | undefined, next: KnownList): boolean {
  if (!known || known.complete !== next.complete || known.models.size !== next.models.size) return false;
  const a = known.models;
  for (const [id, m] of next.models) {
    const o = a.get(id);
    if (!o || o.ownedBy !== m.ownedBy || o.created !== m.created || o.maxModelLen !== m.maxModelLen) return false;
  }
  return true;
}

/**
 * Reads the lists at start and then every `intervalMs` (0: never, so every route stays served).
 * Rounds never overlap: a refresh asked for while one runs waits for that one.
 */
export class ModelListRefresh {
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;
  private first: Promise<void> | null = null;

  constructor(
    readonly lists: UpstreamModelLists,
    private readonly upstreams: () => UpstreamSpec[],
    private readonly intervalMs: number,
    /** Called after each round (start-up reports what the lists mean for the catalog). */
    private readonly afterRound: () => void = () => {},
  ) {}

  /** One round over every configured upstream (a round already running is joined). */
  refresh(): Promise<void> {
    if (this.intervalMs === 0) return Promise.resolve();
    this.running ??= this.lists
      .refresh(this.upstreams())
      .then(this.afterRound)
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  /**
   * The first round, awaited for at most `waitMs` (a slow engine does not hold start-up: until an
   * upstream answers, its routes are served), then a round every interval.
   */
  async start(waitMs: number): Promise<void> {
    if (this.intervalMs === 0 || this.timer) return;
    this.timer = setInterval(() => void this.refresh(), this.intervalMs);
    this.timer.unref?.();
    let wait: ReturnType<typeof setTimeout> | undefined;
    this.first = this.refresh();
    await Promise.race([this.first, new Promise<void>((r) => (wait = setTimeout(r, waitMs)))]);
    clearTimeout(wait);
  }

  /** Settles when the first round at start has (at once when none was started). */
  get ready(): Promise<void> {
    return this.first ?? Promise.resolve();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
