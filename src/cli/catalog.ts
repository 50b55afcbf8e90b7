/**
 * `switchyard catalog|upstreams|routes ...`: models, prices, upstreams and routes managed live,
 * over the same operations as the admin API (catalog/live-admin.ts), against the store a server
 * reads them from (README, "Managing models, prices and routes live"). A running server picks a
 * change up within SWITCHYARD_LIVE_CONFIG_POLL_SECONDS (PostgreSQL: at once, by notification).
 * (`models pull|list` are the local model files, hence the name `catalog`.)
 */
import type { Services } from "../services";
import { LiveCatalogAdmin } from "../catalog/live-admin";
import { testRoute } from "../upstream/route-test";
import { invalidField, notFound } from "../errors";

type Flags = Record<string, string | boolean>;

/** --flag value as a string, or undefined. */
const str = (flags: Flags, name: string): string | undefined => (typeof flags[name] === "string" ? (flags[name] as string) : undefined);

function int(flags: Flags, name: string): number | string | undefined {
  const v = str(flags, name);
  if (v === undefined) return undefined;
  // Not a whole number: passed on as text, so the check names the field and the rule.
  return /^\d+$/.test(v) ? Number(v) : v;
}

function bool(flags: Flags, name: string): boolean | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (v === true || v === "true") return true;
  if (v === "false") return false;
  throw invalidField(`--${name}`, "must be true or false");
}

/** The catalog entry fields given as flags (only those given). */
function entryFlags(flags: Flags): Record<string, unknown> {
  const e: Record<string, unknown> = {};
  if (str(flags, "kind") !== undefined) e.kind = str(flags, "kind");
  if (str(flags, "owned-by") !== undefined) e.owned_by = str(flags, "owned-by");
  if (int(flags, "context-window") !== undefined) e.context_window = int(flags, "context-window");
  if (int(flags, "max-output-tokens") !== undefined) e.max_output_tokens = int(flags, "max-output-tokens");
  if (int(flags, "dimensions") !== undefined) e.dimensions = int(flags, "dimensions");
  if (bool(flags, "turbo") !== undefined) e.turbo = bool(flags, "turbo");
  if (bool(flags, "enabled") !== undefined) e.enabled = bool(flags, "enabled");
  if (bool(flags, "image") !== undefined) e.input_modalities = bool(flags, "image") ? ["text", "image"] : ["text"];
  const pricing: Record<string, string> = {};
  if (str(flags, "input-price") !== undefined) pricing.input_per_million = str(flags, "input-price")!;
  if (str(flags, "output-price") !== undefined) pricing.output_per_million = str(flags, "output-price")!;
  if (str(flags, "characters-price") !== undefined) pricing.characters_per_million = str(flags, "characters-price")!;
  if (str(flags, "cached-input-price") !== undefined) pricing.cached_input_per_million = str(flags, "cached-input-price")!;
  if (str(flags, "cache-write-price") !== undefined) pricing.cache_write_per_million = str(flags, "cache-write-price")!;
  if (Object.keys(pricing).length > 0) e.pricing = pricing;
  return e;
}

function upstreamFlags(flags: Flags, key: string | undefined): Record<string, unknown> {
  const u: Record<string, unknown> = {};
  if (str(flags, "base-url") !== undefined) u.base_url = str(flags, "base-url");
  if (key !== undefined) u.key = key;
  if (str(flags, "key-env") !== undefined) u.key_env = str(flags, "key-env");
  const timeouts: Record<string, unknown> = {};
  for (const [flag, field] of [["connect-ms", "connect_ms"], ["first-byte-ms", "first_byte_ms"], ["idle-ms", "idle_ms"]] as const) {
    if (int(flags, flag) !== undefined) timeouts[field] = int(flags, flag);
  }
  if (Object.keys(timeouts).length > 0) u.timeouts = timeouts;
  if (bool(flags, "keep-alive") !== undefined) u.keep_alive = bool(flags, "keep-alive");
  const tls: Record<string, unknown> = {};
  for (const [flag, field] of [["ca-file", "ca_file"], ["cert-file", "cert_file"], ["key-file", "key_file"]] as const) {
    if (str(flags, flag) !== undefined) tls[field] = str(flags, flag);
  }
  if (Object.keys(tls).length > 0) u.tls = tls;
  return u;
}

/** The key from standard input (`--key-stdin`), so it never sits in the shell's history or `ps`. */
async function keyFromStdin(flags: Flags): Promise<string | undefined> {
  if (flags["key-stdin"] !== true) return undefined;
  const text = await new Response(Bun.stdin.stream()).text();
  return text.trim();
}

export async function catalogCommand(s: Services, command: string, args: string[], flags: Flags): Promise<unknown> {
  const admin = new LiveCatalogAdmin(s);
  const [first = "", second = ""] = args;
  switch (command) {
    case "catalog list":
      return admin.listModels();
    case "catalog show":
      return admin.getModel(first);
    case "catalog add":
      return admin.createModel({ id: first, ...entryFlags(flags) });
    case "catalog update":
      return admin.updateModel(first, entryFlags(flags));
    case "catalog disable":
      return admin.updateModel(first, { enabled: false });
    case "catalog enable":
      return admin.updateModel(first, { enabled: true });
    case "catalog remove":
      return admin.deleteModel(first);
    case "upstreams list":
      return admin.listUpstreams();
    case "upstreams add":
      return admin.createUpstream({ name: first, ...upstreamFlags(flags, await keyFromStdin(flags)) });
    case "upstreams update":
      return admin.updateUpstream(first, upstreamFlags(flags, await keyFromStdin(flags)));
    case "upstreams remove":
      return admin.deleteUpstream(first);
    case "routes list":
      return admin.listRoutes();
    case "routes add": {
      // Appends a route to the model's live routes (starting from the routes it has now).
      const now = (s.routes.configured?.() ?? []).find((c) => c.model === first)?.routes ?? [];
      const route: Record<string, unknown> = { upstream: second };
      if (str(flags, "upstream-model") !== undefined) route.model = str(flags, "upstream-model");
      if (str(flags, "weight") !== undefined) route.weight = /^\d+(\.\d+)?$/.test(str(flags, "weight")!) ? Number(str(flags, "weight")) : str(flags, "weight");
      if (bool(flags, "priority") !== undefined) route.priority = bool(flags, "priority");
      if (bool(flags, "pinned") !== undefined) route.pinned = bool(flags, "pinned");
      return admin.setRoutes(first, [...now, route]);
    }
    case "routes offline":
      return admin.setRoutes(first, []);
    case "routes remove":
      return admin.deleteRoutes(first);
    case "routes test": {
      const routes = s.routes.routesFor?.(first) ?? [];
      if (routes.length === 0) throw notFound(`No routes for '${first}'.`);
      const index = str(flags, "route") === undefined ? null : Number(str(flags, "route"));
      if (index !== null && (!Number.isInteger(index) || index < 0 || index >= routes.length)) throw invalidField("--route", `must be a route index from 0 to ${routes.length - 1}`);
      const picked = index === null ? routes.map((r, i) => [r, i] as const) : [[routes[index]!, index] as const];
      return { object: "route_test", model: first, results: await Promise.all(picked.map(([r, i]) => testRoute(r, i))) };
    }
    default:
      throw new Error(`command '${command}' has no handler`);
  }
}
