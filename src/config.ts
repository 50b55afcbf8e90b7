/**
 * Typed configuration, read once from the environment (contract §2).
 * A bad value throws ConfigError naming the variable; main() prints that one line and exits.
 * Secrets (keys, tokens) are kept in the object but never printed: see describeConfig().
 */
import { resolve } from "node:path";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  adminToken: string | null;
  upstreamUrl: string | null;
  upstreamKey: string | null;
  /** Path to a routes JSON file, or the inline JSON itself. */
  routes: string | null;
  catalogPath: string | null;
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
  /** Execution provider for local ONNX models. */
  onnxProvider: "cpu" | "cuda";
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /**
   * PostgreSQL connection URL (postgres:// or postgresql://): the store every instance pointed at
   * it shares. Null: the embedded SQLite store in dataDir. Holds a password: never print it.
   */
  databaseUrl: string | null;
  /** Connections this instance keeps to PostgreSQL. */
  databasePool: number;
  /** An instance whose heartbeat is older than this is dead: a survivor releases its holds and slots. */
  instanceTimeoutMs: number;
  /** The web dashboard at /dashboard (SWITCHYARD_DASHBOARD=off removes it). */
  dashboard: boolean;
  /** How long a dashboard sign-in lasts, in seconds. */
  dashboardSessionSeconds: number;
  /** Characters one account may have queued for token counting before its requests get 429. */
  tokenQueueChars: number;
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

function postgresUrl(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === null) return null;
  let u: URL | null = null;
  try {
    u = new URL(raw);
  } catch {
    // Reported below without echoing the value: it may hold a password.
  }
  if (!u || (u.protocol !== "postgres:" && u.protocol !== "postgresql:") || !u.hostname) {
    throw new ConfigError(name, "must be a PostgreSQL URL, e.g. postgres://user:password@db.internal:5432/switchyard");
  }
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  const upstreamUrl = httpUrl(env, "SWITCHYARD_UPSTREAM_URL");
  const adminToken = str(env, "SWITCHYARD_ADMIN_TOKEN");
  if (adminToken !== null && adminToken.length < 16) {
    throw new ConfigError("SWITCHYARD_ADMIN_TOKEN", "must be at least 16 characters long");
  }
  return {
    port: int(env, "PORT", 8080, 0, 65535),
    host: str(env, "HOST") ?? "0.0.0.0",
    dataDir: resolve(str(env, "SWITCHYARD_DATA_DIR") ?? "./data"),
    adminToken,
    upstreamUrl,
    upstreamKey: str(env, "SWITCHYARD_UPSTREAM_KEY"),
    routes: str(env, "SWITCHYARD_ROUTES"),
    catalogPath: str(env, "SWITCHYARD_CATALOG"),
    modelAliases: str(env, "SWITCHYARD_MODEL_ALIASES"),
    modelsDir: resolve(str(env, "SWITCHYARD_MODELS_DIR") ?? "./models"),
    rateLimitRpm: int(env, "SWITCHYARD_RATE_LIMIT_RPM", 600, 1, 10_000_000),
    concurrencyLimit: int(env, "SWITCHYARD_CONCURRENCY_LIMIT", 32, 1, 1_000_000),
    maxBodyBytes: int(env, "SWITCHYARD_MAX_BODY_BYTES", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    imageMaxBytes: int(env, "SWITCHYARD_IMAGE_MAX_BYTES", 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    imageMaxPixels: int(env, "SWITCHYARD_IMAGE_MAX_PIXELS", 50_000_000, 64, 1_000_000_000),
    imageMaxEdge: int(env, "SWITCHYARD_IMAGE_MAX_EDGE", 2048, 16, 16_384),
    onnxProvider: oneOf(env, "SWITCHYARD_ONNX_PROVIDER", ["cpu", "cuda"] as const, "cpu"),
    logLevel: oneOf(env, "SWITCHYARD_LOG_LEVEL", ["debug", "info", "warn", "error", "silent"] as const, "info"),
    databaseUrl: postgresUrl(env, "SWITCHYARD_DATABASE_URL"),
    databasePool: int(env, "SWITCHYARD_DATABASE_POOL", 10, 2, 1000),
    instanceTimeoutMs: int(env, "SWITCHYARD_INSTANCE_TIMEOUT_SECONDS", 15, 2, 3600) * 1000,
    dashboard: oneOf(env, "SWITCHYARD_DASHBOARD", ["on", "off"] as const, "on") === "on",
    dashboardSessionSeconds: int(env, "SWITCHYARD_DASHBOARD_SESSION_SECONDS", 12 * 3600, 1, 30 * 86_400),
    tokenQueueChars: int(env, "SWITCHYARD_TOKEN_QUEUE_CHARS", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    countTokensBytes: int(env, "SWITCHYARD_COUNT_TOKENS_BYTES", 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    engineQueueAccountPercent: int(env, "SWITCHYARD_ENGINE_QUEUE_ACCOUNT_PERCENT", 50, 1, 100),
  };
}
