/**
 * Catalog entries for chat models an upstream serves that no catalog names (README, "Serve your
 * own model"): offered under the upstream's own id at SWITCHYARD_DEFAULT_PRICE, with the context
 * window the upstream reports (vLLM's `max_model_len`) or SWITCHYARD_DEFAULT_CONTEXT_WINDOW, and
 * the upstream's `owned_by` or "upstream". Without a default price they are not offered.
 */
import { parseUsd } from "../billing/money";
import { OUTPUT_CEILING, type ModelEntry } from "./model-entry";

/** A model some route serves, with what its upstream's list says about it. */
export interface OfferedModel {
  id: string;
  ownedBy: string | null;
  created: number | null;
  maxModelLen: number | null;
}

/** Where offered models come from (the route registry); `version` moves when the answer may change. */
export interface OfferedSource {
  version(): string;
  models(): OfferedModel[];
}

export interface DiscoverySettings {
  /** USD per million input and output tokens, as decimal strings; null: offered models the catalog lacks stay unlisted. */
  defaultPrice: { input: string; output: string } | null;
  defaultContextWindow: number;
}

export function discoveredEntry(m: OfferedModel, settings: DiscoverySettings): ModelEntry {
  const price = settings.defaultPrice!;
  const contextWindow = m.maxModelLen ?? settings.defaultContextWindow;
  return {
    id: m.id,
    kind: "chat",
    ownedBy: m.ownedBy ?? "upstream",
    created: m.created ?? 0,
    contextWindow,
    maxOutputTokens: Math.min(contextWindow, OUTPUT_CEILING),
    dimensions: null,
    turbo: false,
    inputModalities: ["text"],
    prices: { inputPerMillion: parseUsd(price.input), outputPerMillion: parseUsd(price.output), charactersPerMillion: 0 },
    pricingJson: { input_per_million: price.input, output_per_million: price.output },
    discovered: true,
  };
}
