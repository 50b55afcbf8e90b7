/**
 * Typed configuration, read once from the environment (docs/configuration.md, "Settings").
 * A bad value throws ConfigError naming the variable; main() prints that one line and exits.
 * Secrets (keys, tokens) are kept in the object but never printed: see describeConfig().
 */
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { parseCidrList, type Cidr } from "./net/ip";
import { HEADER_VALUE_RULE, HEADER_VALUE_UNSAFE } from "./upstream/http1/header-value";
import { ProxyConfigError, proxySettings, type ProxySettings } from "./upstream/proxy";
import { CONTEXT_WINDOW_MAX } from "./catalog/catalog-bounds";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  adminToken: string | null;
  /** When set, GET /metrics needs `Authorization: Bearer <token>` (docs/operate.md "Limits, usage and metrics"). */
  metricsToken: string | null;
  upstreamUrl: string | null;
  upstreamKey: string | null;
  /** Path to a routes JSON file, or the inline JSON itself. */
  routes: string | null;
  /** Keep-alive to upstreams for routes that do not say (a route's "keep_alive" overrides it). */
  upstreamKeepAlive: boolean;
  /** `account`: a pooled upstream connection only ever carries one account's requests. */
  upstreamPoolScope: "account" | "shared";
  /** Idle keep-alive upstream connections kept per origin, and in all. */
  upstreamMaxIdlePerOrigin: number;
  upstreamMaxIdle: number;
  /** SO_RCVBUF of upstream connections, KiB (0: the system's own). */
  upstreamReceiveBufferKib: number;
  /** Largest non-streamed upstream reply body in bytes (502 above; reading stops there). */
  upstreamMaxResponseBytes: number;
  catalogPath: string | null;
  /** How often each upstream's GET /v1/models is read again, in seconds; 0: never read (every route served). */
  upstreamModelsRefreshSeconds: number;
  /** Ids kept of one upstream's GET /v1/models list; past it the list is incomplete (README, "Serve your own model"). */
  upstreamModelsMax: number;
  /** Model ids outside the catalog (discovered ones) that get metric series of their own; the rest are model="other". */
  metricsMaxModels: number;
  /** How often a server checks the store for models, upstreams and routes written live elsewhere (the CLI), in seconds; 0: never. */
  liveConfigPollSeconds: number;
  /** USD per million input/output tokens for upstream models the catalog lacks; null: they are not offered. */
  defaultPrice: { input: string; output: string } | null;
  /** Context window of such a model when its upstream reports none. */
  defaultContextWindow: number;
  /** Path to a model-aliases JSON file, or the inline JSON itself. */
  modelAliases: string | null;
  modelsDir: string;
  rateLimitRpm: number;
  concurrencyLimit: number;
  /** Largest accepted request body in bytes (413 above). */
  maxBodyBytes: number;
  /** Chat image inputs: largest decoded size in bytes, largest pixel count, longest edge after normalising. */
  imageMaxBytes: number;
  imageMaxPixels: number;
  imageMaxEdge: number;
  /** Image, audio and video parts one chat request may carry. */
  mediaMaxParts: number;
  /** Pixels of all of one request's images together. */
  imageMaxTotalPixels: number;
  /** Image decodes running at once, shared fairly between accounts. */
  imageDecodeConcurrency: number;
  /** Milliseconds of image decoding each account may use per minute (429 past it). */
  imageDecodeMsPerMinute: number;
  /** Remote media URLs: fetched by the gateway (guarded), refused, or passed to the engine as they are. */
  remoteMedia: "fetch" | "refuse" | "passthrough";
  /** Addresses the media fetcher may reach although they are not public (operator-trusted CIDRs). */
  remoteMediaAllow: Cidr[];
  /** Bytes all of one request's remote media fetches may bring, together. */
  remoteMediaMaxBytes: number;
  /** Time all of one request's remote media fetches may take, together. */
  remoteMediaTimeoutMs: number;
  /** Execution provider for local ONNX models: auto (CUDA when a GPU and its libraries are there), cpu or cuda. */
  onnxProvider: "auto" | "cpu" | "cuda";
  /** Where `switchyard runtime pull cuda` puts the CUDA provider's libraries. */
  runtimeDir: string;
  /** Keep each local model's optimised graph beside it (made on first load) and load that. */
  optimisedGraph: boolean;
  /** Load the embedding model's fused graph on the providers its engine fuses on (SWITCHYARD_FUSED_GRAPH). */
  fusedGraph: boolean;
  /** Threads that tokenise embeddings input off the event loop (0: in the main thread). */
  embeddingTokenizerThreads: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /**
   * PostgreSQL connection URL (postgres:// or postgresql://): the store every instance pointed at
   * it shares. Null: the embedded SQLite store in dataDir. Holds a password: never print it.
   */
  databaseUrl: string | null;
  /** Connections this instance keeps to PostgreSQL. */
  databasePool: number;
  /** A PostgreSQL server that answers nothing (not even a probe) for this long is treated as down. */
  databaseStallMs: number;
  /** An instance whose heartbeat is older than this is dead: a survivor releases its holds and slots. */
  instanceTimeoutMs: number;
  /** PostgreSQL: how often a charge journal ships its charges at the latest (ms; docs/scale-out.md, "Leases"). */
  chargeShipMs: number;
  /** PostgreSQL: how long a hold or admission that does not fit waits for other instances' leases (ms). */
  leaseRecallMs: number;
  /** The web dashboard at /dashboard (SWITCHYARD_DASHBOARD=off removes it). */
  dashboard: boolean;
  /** How long a dashboard sign-in lasts, in seconds. */
  dashboardSessionSeconds: number;
  /** Dashboard sign-ins allowed per minute per key (or for the admin token), successful ones included. */
  dashboardKeySignInsPerMinute: number;
  /** Dashboard sign-ins allowed per minute per client address, whatever the key. */
  dashboardAddressSignInsPerMinute: number;
  /** Live dashboard sessions per account; a further sign-in ends that account's oldest. */
  dashboardSessionsPerAccount: number;
  /** Live operator sessions, a pool of their own; a further sign-in ends the oldest operator one. */
  dashboardOperatorSessions: number;
  /** The address clients reach this server at (dashboard's connect panel); null: from the request's Host. */
  publicUrl: string | null;
  /** Proxies whose X-Forwarded-For is believed (addresses and CIDR blocks); empty: none. */
  trustedProxies: Cidr[];
  /** Forward proxies for upstream calls (HTTP_PROXY, HTTPS_PROXY, NO_PROXY). Hold passwords: never print them. */
  proxies: ProxySettings;
  /** How long a stored Responses turn is kept, in seconds (set in days). */
  responsesRetentionSeconds: number;
  /** Bytes of stored Responses turns an account may keep; the oldest are deleted past it. */
  responsesQuotaBytes: number;
  /** On SIGTERM/SIGINT, how long requests in flight may take to finish before they are cut (ms). */
  shutdownGraceMs: number;
  /** Upstream SSE: the longest line, and the most an event may gather, in characters. */
  sseMaxLineChars: number;
  sseMaxEventChars: number;
  /** The longest a streamed request may run; it then ends as `length`, billed as delivered. */
  streamMaxSeconds: number;
  /** A hold still pending this long after it was taken is voided by the store (≥ streamMaxSeconds + 60). */
  holdExpirySeconds: number;
  /** MiB relayed by all streams together between full collections of the serving thread's heap; 0: never. */
  streamGcMib: number;
  /** Characters one account may have queued for token counting before its requests get 429. */
  tokenQueueChars: number;
  /** The most of one CPU core that long token counts take over time (SWITCHYARD_TOKEN_BACKGROUND_PERCENT). */
  tokenBackgroundPercent: number;
  /** Bytes of text one account's count_tokens requests may have in flight together. */
  countTokensBytes: number;
  /** Share of a local model's queue (speech, embeddings) one account may hold, in per cent. */
  engineQueueAccountPercent: number;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, rule: string) {
    super(`${variable}: ${rule}`);
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | null {
  const v = env[name];
  return v === undefined || v.trim() === "" ? null : v.trim();
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got ${n}`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

function cidrs(env: Env, name: string): Cidr[] {
  const raw = str(env, name);
  if (raw === null) return [];
  try {
    return parseCidrList(raw);
  } catch (e) {
    throw new ConfigError(name, `must be comma-separated IPv4/IPv6 addresses or CIDR blocks: ${(e as Error).message}`);
  }
}

/** An http(s) origin, optionally with a path prefix, without a trailing slash: "https://api.example.com". */
function publicUrl(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === null) return null;
  const u = URL.parse(raw);
  if (u && (u.username || u.password)) throw new ConfigError(name, "must not contain a user name or password");
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:") || u.search || u.hash) {
    throw new ConfigError(name, `must be the http(s) address clients use, e.g. https://api.example.com, got "${raw}"`);
  }
  return (u.origin + u.pathname).replace(/\/+$/, "").replace(/\/v1$/, "");
}

function httpUrl(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === null) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(name, "must be an http(s) URL ending at /v1, e.g. http://127.0.0.1:8000/v1");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(name, "must be an http(s) URL ending at /v1");
  }
  if (/\/chat\/completions\/?$/.test(u.pathname)) {
    throw new ConfigError(name, "must be the base address ending at /v1, without /chat/completions");
  }
  // The upstream client sends neither: a key belongs in SWITCHYARD_UPSTREAM_KEY (never echoed).
  if (u.username !== "" || u.password !== "") throw new ConfigError(name, "must not carry a user name or password; set the key in SWITCHYARD_UPSTREAM_KEY");
  if (u.search !== "" || u.hash !== "") throw new ConfigError(name, "must not carry a query string or fragment");
  return raw.replace(/\/+$/, "");
}

/**
 * A value sent as an HTTP header (an upstream key): surrounding whitespace trimmed (str() does),
 * and refused when a control character is left inside. The rule is named, never the value.
 */
function headerValue(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw !== null && HEADER_VALUE_UNSAFE.test(raw)) throw new ConfigError(name, HEADER_VALUE_RULE);
  return raw;
}

function postgresUrl(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === null) return null;
  // Reported below without echoing the value: it may hold a password.
  const u = URL.parse(raw);
  if (!u || (u.protocol !== "postgres:" && u.protocol !== "postgresql:") || !u.hostname) {
    throw new ConfigError(name, "must be a PostgreSQL URL, e.g. postgres://user:password@db.internal:5432/switchyard");
  }
  return raw;
}

function proxies(env: Env): ProxySettings {
  try {
    return proxySettings(env);
  } catch (err) {
    if (err instanceof ProxyConfigError) throw new ConfigError(err.variable, err.message.slice(err.variable.length + 2));
    throw err;
  }
}

/** "input_per_1m,output_per_1m" in USD, e.g. "0.2,0.6". */
function pricePair(env: Env, name: string): { input: string; output: string } | null {
  const raw = str(env, name);
  if (raw === null) return null;
  const parts = raw.split(",").map((p) => p.trim());
  const decimal = /^\d+(\.\d{1,9})?$/;
  if (parts.length !== 2 || !parts.every((p) => decimal.test(p))) {
    throw new ConfigError(name, `must be two USD prices per million tokens, input then output, e.g. "0.2,0.6", got "${raw}"`);
  }
  return { input: parts[0]!, output: parts[1]! };
}

export function loadConfig(env: Env = process.env): Config {
  const upstreamUrl = httpUrl(env, "SWITCHYARD_UPSTREAM_URL");
  const adminToken = str(env, "SWITCHYARD_ADMIN_TOKEN");
  if (adminToken !== null && adminToken.length < 16) {
    throw new ConfigError("SWITCHYARD_ADMIN_TOKEN", "must be at least 16 characters long");
  }
  const metricsToken = str(env, "SWITCHYARD_METRICS_TOKEN");
  if (metricsToken !== null && metricsToken.length < 16) {
    throw new ConfigError("SWITCHYARD_METRICS_TOKEN", "must be at least 16 characters long");
  }
  const streamMaxSeconds = int(env, "SWITCHYARD_STREAM_MAX_SECONDS", 900, 1, 86_400);
  const holdExpirySeconds = int(env, "SWITCHYARD_HOLD_EXPIRY_SECONDS", streamMaxSeconds + 300, 61, 7 * 86_400);
  if (holdExpirySeconds < streamMaxSeconds + 60) {
    throw new ConfigError("SWITCHYARD_HOLD_EXPIRY_SECONDS", `must be at least SWITCHYARD_STREAM_MAX_SECONDS + 60 (${streamMaxSeconds + 60}), got ${holdExpirySeconds}`);
  }
  return {
    port: int(env, "PORT", 8080, 0, 65535),
    host: str(env, "HOST") ?? "0.0.0.0",
    dataDir: resolve(str(env, "SWITCHYARD_DATA_DIR") ?? "./data"),
    adminToken,
    metricsToken,
    upstreamUrl,
    upstreamKey: headerValue(env, "SWITCHYARD_UPSTREAM_KEY"),
    routes: str(env, "SWITCHYARD_ROUTES"),
    upstreamKeepAlive: oneOf(env, "SWITCHYARD_UPSTREAM_KEEP_ALIVE", ["on", "off"] as const, "on") === "on",
    upstreamPoolScope: oneOf(env, "SWITCHYARD_UPSTREAM_POOL_SCOPE", ["account", "shared"] as const, "account"),
    upstreamMaxIdlePerOrigin: int(env, "SWITCHYARD_UPSTREAM_MAX_IDLE_PER_ORIGIN", 64, 0, 100_000),
    upstreamMaxIdle: int(env, "SWITCHYARD_UPSTREAM_MAX_IDLE", 256, 0, 1_000_000),
    upstreamReceiveBufferKib: int(env, "SWITCHYARD_UPSTREAM_RECEIVE_BUFFER_KIB", 32, 0, 1024 * 1024),
    upstreamMaxResponseBytes: int(env, "SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    catalogPath: str(env, "SWITCHYARD_CATALOG"),
    upstreamModelsRefreshSeconds: int(env, "SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS", 60, 0, 86_400),
    upstreamModelsMax: int(env, "SWITCHYARD_UPSTREAM_MODELS_MAX", 1000, 1, 100_000),
    metricsMaxModels: int(env, "SWITCHYARD_METRICS_MAX_MODELS", 100, 0, 100_000),
    liveConfigPollSeconds: int(env, "SWITCHYARD_LIVE_CONFIG_POLL_SECONDS", 5, 0, 86_400),
    defaultPrice: pricePair(env, "SWITCHYARD_DEFAULT_PRICE"),
    defaultContextWindow: int(env, "SWITCHYARD_DEFAULT_CONTEXT_WINDOW", 32_768, 1, CONTEXT_WINDOW_MAX),
    modelAliases: str(env, "SWITCHYARD_MODEL_ALIASES"),
    modelsDir: resolve(str(env, "SWITCHYARD_MODELS_DIR") ?? "./models"),
    rateLimitRpm: int(env, "SWITCHYARD_RATE_LIMIT_RPM", 600, 1, 10_000_000),
    concurrencyLimit: int(env, "SWITCHYARD_CONCURRENCY_LIMIT", 32, 1, 1_000_000),
    maxBodyBytes: int(env, "SWITCHYARD_MAX_BODY_BYTES", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    imageMaxBytes: int(env, "SWITCHYARD_IMAGE_MAX_BYTES", 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    imageMaxPixels: int(env, "SWITCHYARD_IMAGE_MAX_PIXELS", 50_000_000, 64, 1_000_000_000),
    imageMaxEdge: int(env, "SWITCHYARD_IMAGE_MAX_EDGE", 2048, 16, 16_384),
    mediaMaxParts: int(env, "SWITCHYARD_MEDIA_MAX_PARTS", 20, 1, 10_000),
    imageMaxTotalPixels: int(env, "SWITCHYARD_IMAGE_MAX_TOTAL_PIXELS", 200_000_000, 64, 100_000_000_000),
    imageDecodeConcurrency: int(env, "SWITCHYARD_IMAGE_DECODE_CONCURRENCY", 2, 1, 1024),
    imageDecodeMsPerMinute: int(env, "SWITCHYARD_IMAGE_DECODE_MS_PER_MINUTE", 30_000, 1, 100_000_000),
    remoteMedia: oneOf(env, "SWITCHYARD_REMOTE_MEDIA", ["fetch", "refuse", "passthrough"] as const, "fetch"),
    remoteMediaAllow: cidrs(env, "SWITCHYARD_REMOTE_MEDIA_ALLOW_HOSTS"),
    remoteMediaMaxBytes: int(env, "SWITCHYARD_REMOTE_MEDIA_MAX_BYTES", 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    remoteMediaTimeoutMs: int(env, "SWITCHYARD_REMOTE_MEDIA_TIMEOUT_MS", 10_000, 100, 600_000),
    onnxProvider: oneOf(env, "SWITCHYARD_ONNX_PROVIDER", ["auto", "cpu", "cuda"] as const, "auto"),
    // Default: one per 8 cores, 1 to 4 (EmbeddingGemma's tokenizer: ~0.25 ms per 50-token text).
    embeddingTokenizerThreads: int(env, "SWITCHYARD_EMBEDDING_TOKENIZER_THREADS", Math.max(1, Math.min(4, Math.floor(availableParallelism() / 8))), 0, 64),
    optimisedGraph: oneOf(env, "SWITCHYARD_OPTIMISED_GRAPH", ["on", "off"] as const, "on") === "on",
    fusedGraph: oneOf(env, "SWITCHYARD_FUSED_GRAPH", ["on", "off"] as const, "on") === "on",
    runtimeDir: resolve(str(env, "SWITCHYARD_RUNTIME_DIR") ?? join(str(env, "SWITCHYARD_DATA_DIR") ?? "./data", "runtime")),
    logLevel: oneOf(env, "SWITCHYARD_LOG_LEVEL", ["debug", "info", "warn", "error", "silent"] as const, "info"),
    databaseUrl: postgresUrl(env, "SWITCHYARD_DATABASE_URL"),
    databasePool: int(env, "SWITCHYARD_DATABASE_POOL", 10, 2, 1000),
    databaseStallMs: int(env, "SWITCHYARD_DATABASE_STALL_MS", 2000, 100, 600_000),
    instanceTimeoutMs: int(env, "SWITCHYARD_INSTANCE_TIMEOUT_SECONDS", 15, 2, 3600) * 1000,
    chargeShipMs: int(env, "SWITCHYARD_CHARGE_SHIP_MS", 20, 1, 10_000),
    leaseRecallMs: int(env, "SWITCHYARD_LEASE_RECALL_MS", 500, 0, 60_000),
    dashboard: oneOf(env, "SWITCHYARD_DASHBOARD", ["on", "off"] as const, "on") === "on",
    dashboardSessionSeconds: int(env, "SWITCHYARD_DASHBOARD_SESSION_SECONDS", 12 * 3600, 1, 30 * 86_400),
    dashboardKeySignInsPerMinute: int(env, "SWITCHYARD_DASHBOARD_KEY_SIGNINS_PER_MINUTE", 10, 1, 100_000),
    dashboardAddressSignInsPerMinute: int(env, "SWITCHYARD_DASHBOARD_ADDRESS_SIGNINS_PER_MINUTE", 30, 1, 100_000),
    dashboardSessionsPerAccount: int(env, "SWITCHYARD_DASHBOARD_SESSIONS_PER_ACCOUNT", 20, 1, 10_000),
    dashboardOperatorSessions: int(env, "SWITCHYARD_DASHBOARD_OPERATOR_SESSIONS", 50, 1, 10_000),
    publicUrl: publicUrl(env, "SWITCHYARD_PUBLIC_URL"),
    trustedProxies: cidrs(env, "SWITCHYARD_TRUSTED_PROXIES"),
    proxies: proxies(env),
    responsesRetentionSeconds: int(env, "SWITCHYARD_RESPONSES_RETENTION_DAYS", 30, 1, 3650) * 86_400,
    responsesQuotaBytes: int(env, "SWITCHYARD_RESPONSES_QUOTA_BYTES", 100 * 1024 * 1024, 1024, 2 ** 50),
    shutdownGraceMs: int(env, "SWITCHYARD_SHUTDOWN_GRACE_SECONDS", 30, 0, 3600) * 1000,
    sseMaxLineChars: int(env, "SWITCHYARD_SSE_MAX_LINE_CHARS", 1024 * 1024, 1024, 256 * 1024 * 1024),
    sseMaxEventChars: int(env, "SWITCHYARD_SSE_MAX_EVENT_CHARS", 1024 * 1024, 1024, 256 * 1024 * 1024),
    streamMaxSeconds,
    holdExpirySeconds,
    streamGcMib: int(env, "SWITCHYARD_STREAM_GC_MIB", 0, 0, 1024),
    tokenQueueChars: int(env, "SWITCHYARD_TOKEN_QUEUE_CHARS", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    tokenBackgroundPercent: int(env, "SWITCHYARD_TOKEN_BACKGROUND_PERCENT", 50, 1, 100),
    countTokensBytes: int(env, "SWITCHYARD_COUNT_TOKENS_BYTES", 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    engineQueueAccountPercent: int(env, "SWITCHYARD_ENGINE_QUEUE_ACCOUNT_PERCENT", 50, 1, 100),
  };
}
