/**
 * The SWITCHYARD_ROUTES document: named upstreams and per-model routes, checked with TypeBox.
 * parseRoutes is pure: text (and the TLS files it names, read beforehand by loadRoutes, off the
 * event loop) in, a validated table out, or a RoutesConfigError whose message names the JSON path
 * and the rule (never a key, never the file's contents).
 *
 * {
 *   "upstreams": {
 *     "vllm-a": { "base_url": "http://10.0.0.5:8000/v1", "api_key_env": "VLLM_A_KEY",
 *                 "timeouts": { "connect_ms": 3000, "first_byte_ms": 60000, "idle_ms": 60000 },
 *                 "priority_hint": -10, "keep_alive": true },
 *     "hosted":  { "base_url": "https://llm.internal/v1",
 *                  "tls": { "ca_file": "/etc/ssl/internal-ca.pem",
 *                           "cert_file": "/etc/switchyard/client.crt", "key_file": "/etc/switchyard/client.key" } }
 *   },
 *   "models": {
 *     "glm-4.6": [ { "upstream": "vllm-a", "model": "zai-org/GLM-4.6", "weight": 3 },
 *                  { "upstream": "vllm-b", "model": "glm", "priority": true } ]
 *   },
 *   "circuit_breaker": { "failures": 5, "cooldown_ms": 30000 }
 * }
 *
 * Defaults: model = the public id, weight 1 (0 = standby, tried only after weighted routes),
 * priority false, pinned false (true: served even when the upstream's model list omits it), timeouts 10 s / 120 s / 120 s, priority_hint -10, keep_alive
 * SWITCHYARD_UPSTREAM_KEEP_ALIVE (on). A model listed with [] is
 * offline even when SWITCHYARD_UPSTREAM_URL is set; models not listed go to that default.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { HEADER_VALUE_RULE, HEADER_VALUE_UNSAFE } from "./http1/header-value";
import type { TlsOptions } from "./http1/target";
import { proxyFor, type ProxySettings, type ProxySpec } from "./proxy";
import { ConfigFileError, readConfigFile } from "../config-file";
import { MODEL_ID_MAX, MODEL_ID_PATTERN } from "../catalog/catalog-bounds";

const Ms = (max: number) => Type.Integer({ minimum: 1, maximum: max });

/** A route's upstream-side model name: 1 to 256 characters, no control characters (as model lists are read). */
export const UPSTREAM_MODEL_MAX = 256;
export const UPSTREAM_MODEL_PATTERN = "^[^\\x00-\\x1f\\x7f]+$";
const UPSTREAM_MODEL = new RegExp(UPSTREAM_MODEL_PATTERN);
/** Whether `s` can be an upstream's own name for a model (routes, the live catalog, model lists). */
export const isUpstreamModel = (s: unknown): s is string => typeof s === "string" && s.length <= UPSTREAM_MODEL_MAX && UPSTREAM_MODEL.test(s);

const UpstreamSchema = Type.Object(
  {
    base_url: Type.String({ pattern: "^https?://[^\\s]+$" }),
    api_key: Type.Optional(Type.String({ minLength: 1 })),
    /** Name of an environment variable holding the key, so the file itself holds no secret. */
    api_key_env: Type.Optional(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" })),
    timeouts: Type.Optional(
      Type.Object(
        { connect_ms: Type.Optional(Ms(600_000)), first_byte_ms: Type.Optional(Ms(3_600_000)), idle_ms: Type.Optional(Ms(3_600_000)) },
        { additionalProperties: false },
      ),
    ),
    /** false: a new connection per request, closed after it (SWITCHYARD_UPSTREAM_KEEP_ALIVE is the default). */
    keep_alive: Type.Optional(Type.Boolean()),
    /** vLLM-style `priority` sent with turbo requests on non-priority routes; null sends none. */
    priority_hint: Type.Optional(Type.Union([Type.Integer({ minimum: -1_000_000, maximum: 1_000_000 }), Type.Null()])),
    /** PEM files: a CA bundle trusted instead of the bundled CAs, and a client certificate with its key. */
    tls: Type.Optional(
      Type.Object(
        { ca_file: Type.Optional(Type.String({ minLength: 1 })), cert_file: Type.Optional(Type.String({ minLength: 1 })), key_file: Type.Optional(Type.String({ minLength: 1 })) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const RouteSchema = Type.Object(
  {
    upstream: Type.String({ minLength: 1 }),
    /** The model name the upstream knows; defaults to the public id. */
    model: Type.Optional(Type.String({ minLength: 1, maxLength: UPSTREAM_MODEL_MAX, pattern: UPSTREAM_MODEL_PATTERN })),
    weight: Type.Optional(Type.Number({ minimum: 0, maximum: 1_000_000 })),
    priority: Type.Optional(Type.Boolean()),
    /** Serve this route even when its upstream's GET /v1/models does not list the model. */
    pinned: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const RoutesSchema = Type.Object(
  {
    // additionalProperties: a record's key pattern alone admits any other key.
    upstreams: Type.Record(Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$" }), UpstreamSchema, { additionalProperties: false }),
    /** Keyed by public id: the catalog's id rule, so a route never makes an id no catalog could hold. */
    models: Type.Record(Type.String({ pattern: MODEL_ID_PATTERN, maxLength: MODEL_ID_MAX }), Type.Array(RouteSchema), { additionalProperties: false }),
    circuit_breaker: Type.Optional(
      Type.Object(
        { failures: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })), cooldown_ms: Type.Optional(Ms(3_600_000)) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export type RoutesJson = Static<typeof RoutesSchema>;

export class RoutesConfigError extends Error {}

export const DEFAULT_TIMEOUTS = { connectTimeoutMs: 10_000, firstByteTimeoutMs: 120_000, idleTimeoutMs: 120_000 };
/** vLLM's `priority`: lower is scheduled sooner, 0 is the default of every request. */
export const DEFAULT_PRIORITY_HINT = -10;
export const DEFAULT_BREAKER = { failures: 5, cooldownMs: 30_000 };

export interface UpstreamSpec {
  name: string;
  baseUrl: string;
  apiKey: string | null;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  priorityHint: number | null;
  /** Reuse connections (keep-alive); false: one connection per request. */
  keepAlive: boolean;
  /** The forward proxy in between (HTTP_PROXY / HTTPS_PROXY / NO_PROXY), or null. */
  proxy: ProxySpec | null;
  /** The upstream's own CA bundle and client certificate, or null. */
  tls: TlsOptions | null;
}

const NO_PROXIES: ProxySettings = { http: null, https: null, noProxy: [] };

type TlsFiles = NonNullable<Static<typeof UpstreamSchema>["tls"]>;
const TLS_FIELDS = [["ca_file", "ca"], ["cert_file", "cert"], ["key_file", "key"]] as const;

/** The TLS files' texts by path, or why each cannot be read (loadRoutes fills it). */
export type TlsFileTexts = ReadonlyMap<string, string | ConfigFileError>;

/** Takes an upstream's PEM files from `files`; an error names the field and the rule, never the file's contents. */
function readTls(name: string, tlsFiles: TlsFiles | undefined, baseUrl: string, files: TlsFileTexts): TlsOptions | null {
  if (tlsFiles === undefined) return null;
  const at = `/upstreams/${name}/tls`;
  if (!baseUrl.startsWith("https://")) throw new RoutesConfigError(`${at}: applies to https:// upstreams only`);
  if ((tlsFiles.cert_file === undefined) !== (tlsFiles.key_file === undefined)) throw new RoutesConfigError(`${at}: cert_file and key_file go together`);
  const tls: TlsOptions = {};
  for (const [field, slot] of TLS_FIELDS) {
    const path = tlsFiles[field];
    if (path === undefined) continue;
    const pem = files.get(path);
    if (pem === undefined || pem instanceof ConfigFileError) throw new RoutesConfigError(`${at}/${field}: cannot read the file${pem ? ` (${pem.message})` : ""}`);
    if (!pem.includes("-----BEGIN ")) throw new RoutesConfigError(`${at}/${field}: must be a PEM file`);
    tls[slot] = pem;
  }
  return tls;
}

export interface RouteSpec {
  upstream: string;
  model: string;
  weight: number;
  priority: boolean;
  pinned: boolean;
}

export interface RoutesTable {
  upstreams: Map<string, UpstreamSpec>;
  models: Map<string, RouteSpec[]>;
  breaker: { failures: number; cooldownMs: number };
}

/** A key as sent in a header: trimmed, and refused when a control character is left inside. */
function headerKey(raw: string, where: string): string {
  const key = raw.trim();
  if (key === "") throw new RoutesConfigError(`${where}: must not be empty or only whitespace`);
  if (HEADER_VALUE_UNSAFE.test(key)) throw new RoutesConfigError(`${where}: ${HEADER_VALUE_RULE}`);
  return key;
}

export interface RoutesDefaults {
  keepAlive: boolean;
  proxies?: ProxySettings;
  /**
   * When set, `api_key_env` may only name variables starting with it (upstreams written live:
   * docs/operate.md, "Managing models, prices and routes live"), so an admin cannot have the server send
   * any of its environment to a host of their choosing.
   */
  keyEnvPrefix?: string;
}

/** The routes document, checked (what parseRoutes throws for a bad one). */
function checkedJson(text: string): RoutesJson {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RoutesConfigError("is not valid JSON");
  }
  if (!Value.Check(RoutesSchema, json)) {
    const first = [...Value.Errors(RoutesSchema, json)][0];
    const at = first?.path || "/";
    // A key outside its record's pattern reads as an unexpected property: say what a key must be.
    if (/^\/models\/[^/]*$/.test(at) && /unexpected/i.test(first?.message ?? "")) throw new RoutesConfigError(`${at}: is not a model id: letters, digits and . - _ : / @ +, starting with a letter or digit, at most ${MODEL_ID_MAX} characters`);
    if (/^\/upstreams\/[^/]*$/.test(at) && /unexpected/i.test(first?.message ?? "")) throw new RoutesConfigError(`${at}: is not an upstream name: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
    throw new RoutesConfigError(`${at}: ${first?.message ?? "is not a valid routes document"}`);
  }
  return json;
}

/** Reads the TLS files the document names (off the event loop, regular files only), then parses it. */
export async function loadRoutes(text: string, env: Record<string, string | undefined> = process.env, defaults: RoutesDefaults = { keepAlive: true }): Promise<RoutesTable> {
  const json = checkedJson(text);
  const paths = new Set<string>();
  for (const u of Object.values(json.upstreams)) for (const [field] of TLS_FIELDS) if (u.tls?.[field] !== undefined) paths.add(u.tls[field]!);
  const files = new Map<string, string | ConfigFileError>();
  await Promise.all([...paths].map(async (path) => {
    try {
      files.set(path, await readConfigFile(path));
    } catch (e) {
      files.set(path, e instanceof ConfigFileError ? e : new ConfigFileError("cannot read it"));
    }
  }));
  return routesTable(json, env, defaults, files);
}

export function parseRoutes(
  text: string,
  env: Record<string, string | undefined> = process.env,
  defaults: RoutesDefaults = { keepAlive: true },
  files: TlsFileTexts = new Map(),
): RoutesTable {
  return routesTable(checkedJson(text), env, defaults, files);
}

/** The table of a checked routes document. */
function routesTable(json: RoutesJson, env: Record<string, string | undefined>, defaults: RoutesDefaults, files: TlsFileTexts): RoutesTable {
  const upstreams = new Map<string, UpstreamSpec>();
  for (const [name, u] of Object.entries(json.upstreams)) {
    let apiKey = u.api_key === undefined ? null : headerKey(u.api_key, `/upstreams/${name}/api_key`);
    if (u.api_key_env !== undefined) {
      if (defaults.keyEnvPrefix !== undefined && (!u.api_key_env.startsWith(defaults.keyEnvPrefix) || u.api_key_env === defaults.keyEnvPrefix)) {
        throw new RoutesConfigError(`/upstreams/${name}/api_key_env: must name a variable starting with ${defaults.keyEnvPrefix} (an upstream written live reads only those), e.g. ${defaults.keyEnvPrefix}${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`);
      }
      // The variable itself, never a member every object has ("constructor", "toString").
      const v = Object.hasOwn(env, u.api_key_env) ? env[u.api_key_env] : undefined;
      if (v === undefined || v === "") throw new RoutesConfigError(`/upstreams/${name}/api_key_env: environment variable ${u.api_key_env} is not set`);
      apiKey = headerKey(v, `/upstreams/${name}/api_key_env: environment variable ${u.api_key_env}`);
    }
    let base: URL;
    try {
      base = new URL(u.base_url);
    } catch {
      throw new RoutesConfigError(`/upstreams/${name}/base_url: must be an http(s) URL ending at /v1`);
    }
    if (/\/chat\/completions\/?$/.test(base.pathname)) {
      throw new RoutesConfigError(`/upstreams/${name}/base_url: must be the base address ending at /v1, without /chat/completions`);
    }
    // The upstream client sends neither: a key belongs in api_key_env (and is never echoed).
    if (base.username !== "" || base.password !== "") {
      throw new RoutesConfigError(`/upstreams/${name}/base_url: must not carry a user name or password; name the key's variable in api_key_env`);
    }
    if (base.search !== "" || base.hash !== "") throw new RoutesConfigError(`/upstreams/${name}/base_url: must not carry a query string or fragment`);
    const baseUrl = u.base_url.replace(/\/+$/, "");
    upstreams.set(name, {
      name,
      baseUrl,
      apiKey,
      connectTimeoutMs: u.timeouts?.connect_ms ?? DEFAULT_TIMEOUTS.connectTimeoutMs,
      firstByteTimeoutMs: u.timeouts?.first_byte_ms ?? DEFAULT_TIMEOUTS.firstByteTimeoutMs,
      idleTimeoutMs: u.timeouts?.idle_ms ?? DEFAULT_TIMEOUTS.idleTimeoutMs,
      priorityHint: u.priority_hint === undefined ? DEFAULT_PRIORITY_HINT : u.priority_hint,
      keepAlive: u.keep_alive ?? defaults.keepAlive,
      proxy: proxyFor(defaults.proxies ?? NO_PROXIES, baseUrl),
      tls: readTls(name, u.tls, baseUrl, files),
    });
  }
  const models = new Map<string, RouteSpec[]>();
  for (const [publicId, routes] of Object.entries(json.models)) {
    const specs: RouteSpec[] = [];
    routes.forEach((r, i) => {
      if (!upstreams.has(r.upstream)) throw new RoutesConfigError(`/models/${publicId}/${i}/upstream: no upstream named "${r.upstream}" in /upstreams`);
      specs.push({ upstream: r.upstream, model: r.model ?? publicId, weight: r.weight ?? 1, priority: r.priority ?? false, pinned: r.pinned ?? false });
    });
    models.set(publicId, specs);
  }
  return {
    upstreams,
    models,
    breaker: {
      failures: json.circuit_breaker?.failures ?? DEFAULT_BREAKER.failures,
      cooldownMs: json.circuit_breaker?.cooldown_ms ?? DEFAULT_BREAKER.cooldownMs,
    },
  };
}
