/**
 * What each kind of request costs, in units, from catalog prices (docs/money.md).
 * Holds use the most a request can reach; charges use what was actually metered.
 */
import { cost, formatUsd, type Multiplier } from "./money";
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

/** Each entry's notes, per multiplier: entries are replaced, never changed, when prices change. */
const notes = new WeakMap<ModelEntry, Map<Multiplier, string>>();

/**
 * The prices a hold is computed with, as recorded on its charge's ledger entry (`reason`), e.g.
 * "price per 1M USD: input 0.2, output 0.6" or "..., x1.5" for the priority tier.
 */
export function priceNote(entry: ModelEntry, m: Multiplier): string {
  let byTier = notes.get(entry);
  if (!byTier) notes.set(entry, (byTier = new Map()));
  let note = byTier.get(m);
  if (note === undefined) {
    const p = entry.prices;
    const parts = entry.kind === "speech" ? [`characters ${formatUsd(p.charactersPerMillion)}`]
      : entry.kind === "embedding" ? [`input ${formatUsd(p.inputPerMillion)}`]
      : [`input ${formatUsd(p.inputPerMillion)}`, `output ${formatUsd(p.outputPerMillion)}`];
    if (m.num !== m.den) parts.push(`x${m.num / m.den}`);
    note = `price per 1M USD: ${parts.join(", ")}`;
    byTier.set(m, note);
  }
  return note;
}

/** Unicode code points, not UTF-16 units: "😀" is one billed character. */
export function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
