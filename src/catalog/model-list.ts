/**
 * The public model list (GET /v1/models): live models only, turbo-capable ones twice.
 * Nothing here reveals routes or upstream names.
 */
import { ENDPOINT_OF_KIND, TURBO_SUFFIX, type Catalog, type ModelEntry } from "./catalog";
import { PRIORITY } from "../billing/money";

/** Says whether a model can serve right now (a route exists, or its weights are loaded). */
export type LivenessCheck = (entry: ModelEntry) => boolean;

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
      ...(p.characters_per_million ? { per_million_characters: scaled(p.characters_per_million, turbo) } : {}),
    },
  };
}

export function listModels(catalog: Catalog, isLive: LivenessCheck) {
  const data = [];
  for (const entry of catalog.all()) {
    if (!isLive(entry)) continue;
    data.push(modelObject(entry, false));
    if (entry.turbo) data.push(modelObject(entry, true));
  }
  return { object: "list" as const, data };
}

