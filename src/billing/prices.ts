/**
 * What each kind of request costs, in units, from catalog prices (contract §7, spec §8).
 * Holds use the most a request can reach; charges use what was actually metered.
 */
import { cost, type Multiplier } from "./money";
import type { ModelEntry } from "../catalog/catalog";

export interface ChatMeter {
  inputTokens: number;
  outputTokens: number;
}

export function chatCost(entry: ModelEntry, m: Multiplier, usage: ChatMeter): number {
  return cost(
    [
      { quantity: usage.inputTokens, pricePerMillion: entry.prices.inputPerMillion },
      { quantity: usage.outputTokens, pricePerMillion: entry.prices.outputPerMillion },
    ],
    m,
  );
}

/** Speech: per input character, counted as Unicode code points. */
export function speechCost(entry: ModelEntry, m: Multiplier, characters: number): number {
  return cost([{ quantity: characters, pricePerMillion: entry.prices.charactersPerMillion }], m);
}

/** Embeddings: per input token; there are no output tokens. */
export function embeddingCost(entry: ModelEntry, m: Multiplier, inputTokens: number): number {
  return cost([{ quantity: inputTokens, pricePerMillion: entry.prices.inputPerMillion }], m);
}

/** Unicode code points, not UTF-16 units: "😀" is one billed character. */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
