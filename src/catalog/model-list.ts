/**
 * The public model list (GET /v1/models): live models only, turbo-capable ones twice.
 * Nothing here reveals routes or upstream names. Built from the live entries, which the caller
 * keeps per version of the list (catalog-view.ts), so a request does not walk the catalog.
 */
import { ENDPOINT_OF_KIND, TURBO_SUFFIX, type ModelEntry } from "./model-entry";
import { PRIORITY } from "../billing/money";

/**
 * A catalog price as shown: the exact decimal, without trailing zeros, times 1.5 for turbo.
 * Done on integers with one extra decimal digit, which makes 3/2 of a 9-decimal price exact.
 */
function scaled(decimal: string | undefined, turbo: boolean): string | undefined {
  if (decimal === undefined) return undefined;
  const m = turbo ? PRIORITY : { num: 1, den: 1 };
  const [whole, frac = ""] = decimal.split(".");
  const units = (BigInt(whole + frac.padEnd(9, "0")) * 10n * BigInt(m.num)) / BigInt(m.den);
  const text = units.toString().padStart(11, "0");
  return (text.slice(0, -10).replace(/^0+(?=\d)/, "") + "." + text.slice(-10)).replace(/\.?0+$/, "");
}

export function modelObject(entry: ModelEntry, turbo: boolean) {
  const p = entry.pricingJson;
  return {
    id: turbo ? entry.id + TURBO_SUFFIX : entry.id,
    object: "model" as const,
    created: entry.created,
    owned_by: entry.ownedBy,
    type: entry.kind,
    endpoint: ENDPOINT_OF_KIND[entry.kind],
    ...(entry.kind === "chat" ? { context_window: entry.contextWindow, max_output_tokens: entry.maxOutputTokens } : {}),
    ...(entry.kind === "embedding" ? { context_window: entry.contextWindow, dimensions: entry.dimensions ?? 768 } : {}),
    input_modalities: entry.inputModalities,
    service_tier: turbo ? "priority" : "default",
    turbo_available: entry.turbo,
    pricing: {
      currency: "USD",
      ...(p.input_per_million ? { input_per_million_tokens: scaled(p.input_per_million, turbo) } : {}),
      ...(p.output_per_million ? { output_per_million_tokens: scaled(p.output_per_million, turbo) } : {}),
      // Present only where the catalog sets them; absent, a cached or written prompt token costs the input price.
      ...(p.cached_input_per_million ? { cached_input_per_million_tokens: scaled(p.cached_input_per_million, turbo) } : {}),
      ...(p.cache_write_per_million ? { cache_write_per_million_tokens: scaled(p.cache_write_per_million, turbo) } : {}),
      ...(p.characters_per_million ? { per_million_characters: scaled(p.characters_per_million, turbo) } : {}),
    },
  };
}

/** The OpenAI list of the live entries. */
export function listModels(live: readonly ModelEntry[]) {
  const data = [];
  for (const entry of live) {
    data.push(modelObject(entry, false));
    if (entry.turbo) data.push(modelObject(entry, true));
  }
  return { object: "list" as const, data };
}


/**
 * The Anthropic Models API shape (`GET /v1/models` with an `anthropic-version` header, as the
 * Anthropic SDK and Claude Code send it): chat models only, since only they speak Messages.
 */
export function anthropicModelObject(entry: ModelEntry, turbo: boolean) {
  const id = turbo ? entry.id + TURBO_SUFFIX : entry.id;
  return {
    type: "model" as const,
    id,
    display_name: turbo ? `${entry.id} (turbo)` : entry.id,
    created_at: new Date(entry.created * 1000).toISOString().replace(/\.000Z$/, "Z"),
  };
}

export type AnthropicModel = ReturnType<typeof anthropicModelObject>;

/** Every live chat model in Anthropic's shape, with each id's position (for the cursors). */
export function anthropicModels(live: readonly ModelEntry[]): { all: AnthropicModel[]; position: Map<string, number> } {
  const all: AnthropicModel[] = [];
  for (const entry of live) {
    if (entry.kind !== "chat") continue;
    all.push(anthropicModelObject(entry, false));
    if (entry.turbo) all.push(anthropicModelObject(entry, true));
  }
  return { all, position: new Map(all.map((m, i) => [m.id, i])) };
}

/** Anthropic's cursor list: `limit` 1–1000 (20), `after_id` / `before_id`; work in `limit`, not in the list's length. */
export function pageAnthropicModels(models: { all: AnthropicModel[]; position: Map<string, number> }, q: { limit?: number; afterId?: string; beforeId?: string } = {}) {
  const { all, position } = models;
  let start = 0;
  let end = all.length;
  if (q.afterId !== undefined) start = (position.get(q.afterId) ?? -1) + 1;
  if (q.beforeId !== undefined) end = Math.max(0, position.get(q.beforeId) ?? -1);
  const limit = q.limit ?? 20;
  const from = Math.min(start, end);
  const windowLength = Math.max(0, end - start);
  const data = q.beforeId !== undefined && q.afterId === undefined ? all.slice(Math.max(from, end - limit), end) : all.slice(from, Math.min(end, from + limit));
  return {
    data,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
    has_more: windowLength > data.length,
  };
}
