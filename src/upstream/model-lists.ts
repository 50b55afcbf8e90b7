/**
 * What each upstream says it serves: its `GET /v1/models` (vLLM, SGLang, llama.cpp's server and
 * Ollama all answer it, in OpenAI's shape `{ data: [{ id, owned_by?, max_model_len? }] }`), read
 * at start and then every SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS (README, "Serve your own
 * model"). Asked over the project's HTTP/1.1 client with the upstream's key, connect timeout,
 * proxy and TLS settings. An upstream that cannot be reached, or answers anything but a list,
 * keeps its last known list; one that never answered has none, and its routes count as served.
 * Nothing from here reaches a client except model ids and the listed `owned_by`.
 */
import { readBoundedText, request1 } from "./http1/client";
import { targetFor } from "./client";
import type { ConnectionPool } from "./http1/pool";
import type { UpstreamSpec } from "./routes-config";

/** One model as an upstream lists it. */
export interface ListedModel {
  id: string;
  /** The listed `owned_by`, when it is a short string that does not name the upstream. */
  ownedBy: string | null;
  created: number | null;
  /** vLLM's `max_model_len`: the context window the engine was started with. */
  maxModelLen: number | null;
}

/** A model list is at most this large (a hosted API may list thousands of ids). */
const MAX_LIST_BYTES = 4 * 1024 * 1024;
/** A list request may take this long in all, after connecting. */
const LIST_DEADLINE_MS = 10_000;

/** The identity of an upstream's list: its name and address (a reload keeps lists it did not change). */
export function upstreamKey(u: Pick<UpstreamSpec, "name" | "baseUrl">): string {
  return `${u.name}\u0000${u.baseUrl}`;
}

/** Parses a `/models` answer; null when it is not an OpenAI-shaped list. */
export function parseModelList(text: string, upstream: Pick<UpstreamSpec, "name" | "baseUrl">): ListedModel[] | null {
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
  const out: ListedModel[] = [];
  for (const m of data) {
    const id = (m as { id?: unknown } | null)?.id;
    if (typeof id !== "string" || id === "" || id.length > 256 || /[\x00-\x1f\x7f]/.test(id)) continue;
    const o = m as { owned_by?: unknown; created?: unknown; max_model_len?: unknown };
    let ownedBy = typeof o.owned_by === "string" && o.owned_by.trim() !== "" && o.owned_by.length <= 64 ? o.owned_by.trim() : null;
    // Never the upstream's configured name or host.
    if (ownedBy !== null && (ownedBy === upstream.name || (host !== "" && ownedBy.toLowerCase().includes(host)))) ownedBy = null;
    const created = Number.isSafeInteger(o.created) && (o.created as number) >= 0 ? (o.created as number) : null;
    const maxModelLen = Number.isSafeInteger(o.max_model_len) && (o.max_model_len as number) > 0 ? (o.max_model_len as number) : null;
    out.push({ id, ownedBy, created, maxModelLen });
  }
  return out;
}

/** GET <base_url>/models; throws when the upstream cannot be reached or does not answer a list. */
export async function fetchModelList(upstream: UpstreamSpec, pool?: ConnectionPool): Promise<ListedModel[]> {
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
    const list = parseModelList(await readBoundedText(res.body, MAX_LIST_BYTES), upstream);
    if (list === null) throw new Error("did not answer an OpenAI-shaped model list");
    return list;
  } finally {
    clearTimeout(timer);
  }
}

export type ListFetcher = (upstream: UpstreamSpec) => Promise<ListedModel[]>;

/** The last list each upstream answered (by name and address); `version` moves when one changes. */
export class UpstreamModelLists {
  private readonly lists = new Map<string, Map<string, ListedModel>>();
  /** Upstreams whose last attempt failed (a failure is reported once, until an answer comes). */
  private readonly failing = new Set<string>();
  private changes = 0;

  constructor(
    private readonly fetcher: ListFetcher = (u) => fetchModelList(u),
    private readonly onError: (upstream: string, why: string) => void = () => {},
  ) {}

  get version(): number {
    return this.changes;
  }

  /** The upstream's last list, or null when it never answered one. */
  of(upstream: Pick<UpstreamSpec, "name" | "baseUrl">): ReadonlyMap<string, ListedModel> | null {
    return this.lists.get(upstreamKey(upstream)) ?? null;
  }

  /** Asks every upstream at once; one that fails keeps its last list. */
  async refresh(upstreams: UpstreamSpec[]): Promise<void> {
    await Promise.all(
      upstreams.map(async (u) => {
        try {
          const list = await this.fetcher(u);
          const key = upstreamKey(u);
          this.failing.delete(key);
          const next = new Map(list.map((m) => [m.id, m]));
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

function sameList(a: Map<string, ListedModel> | undefined, b: Map<string, ListedModel>): boolean {
  if (!a || a.size !== b.size) return false;
  for (const [id, m] of b) {
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
