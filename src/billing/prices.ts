/**
 * What each kind of request costs, in units, from catalog prices (docs/money.md).
 * Holds use the most a request can reach; charges use what was actually metered.
 */
import { cost, formatUsd, type Multiplier } from "./money";
import type { ModelEntry } from "../catalog/catalog";
import type { Consumption } from "./ledger-store";
import type { Pricing } from "./hold";

export interface ChatMeter {
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, read from the engine's prompt cache. */
  cachedTokens?: number;
  /** Of inputTokens, written to the engine's prompt cache. */
  cacheWriteTokens?: number;
}

type Prices = ModelEntry["prices"];

/** A cache read costs the input price unless the catalog sets its own. */
export const cachedInputPrice = (p: Prices): number => p.cachedInputPerMillion ?? p.inputPerMillion;
/** A cache write costs the input price unless the catalog sets its own. */
export const cacheWritePrice = (p: Prices): number => p.cacheWritePerMillion ?? p.inputPerMillion;

/**
 * The prompt split as it is priced. Reads and writes are parts of the prompt: a count above it is
 * cut to it (reads first, then writes from what is left), so an upstream that reports more cached
 * tokens than it was sent never makes a prompt cheaper than all-cached.
 */
export function inputParts(u: ChatMeter): { uncached: number; cached: number; written: number } {
  const cached = Math.min(u.cachedTokens ?? 0, u.inputTokens);
  const written = Math.min(u.cacheWriteTokens ?? 0, u.inputTokens - cached);
  return { uncached: u.inputTokens - cached - written, cached, written };
}

/** Uncached input × input price + cache reads × cached price + cache writes × write price + output × output price. */
export function chatCost(entry: ModelEntry, m: Multiplier, usage: ChatMeter): number {
  const p = entry.prices;
  const { uncached, cached, written } = inputParts(usage);
  return cost(
    [
      { quantity: uncached, pricePerMillion: p.inputPerMillion },
      { quantity: cached, pricePerMillion: cachedInputPrice(p) },
      { quantity: written, pricePerMillion: cacheWritePrice(p) },
      { quantity: usage.outputTokens, pricePerMillion: p.outputPerMillion },
    ],
    m,
  );
}

/** A chat hold's pricing: the usage it settles with, priced by chatCost. */
export function chatPricing(entry: ModelEntry, m: Multiplier): Pricing {
  return (u) => chatCost(entry, m, { inputTokens: u.inputTokens ?? 0, outputTokens: u.outputTokens ?? 0, cachedTokens: u.cachedTokens, cacheWriteTokens: u.cacheWriteTokens });
}

/**
 * What a chat hold covers: the prompt's bound and the output cap, every prompt token at the
 * dearest of the input, cache-read and cache-write prices (a cache write may cost more than the
 * input, as Anthropic's and MiniMax's do), so no honest usage costs more than its hold.
 */
export function chatBudget(entry: ModelEntry, inputBound: number, maxOutput: number): Consumption {
  const p = entry.prices;
  const budget: Consumption = { inputTokens: inputBound, outputTokens: maxOutput };
  const [input, read, write] = [p.inputPerMillion, cachedInputPrice(p), cacheWritePrice(p)];
  if (write > input && write >= read) budget.cacheWriteTokens = inputBound;
  else if (read > input) budget.cachedTokens = inputBound;
  return budget;
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
 * "price per 1M USD: input 0.2, output 0.6" or "..., x1.5" for the priority tier; a model with
 * its own cache prices adds them: "input 1, cached input 0.1, cache write 1.25, output 2".
 */
export function priceNote(entry: ModelEntry, m: Multiplier): string {
  let byTier = notes.get(entry);
  if (!byTier) notes.set(entry, (byTier = new Map()));
  let note = byTier.get(m);
  if (note === undefined) {
    const p = entry.prices;
    const parts = entry.kind === "speech" ? [`characters ${formatUsd(p.charactersPerMillion)}`]
      : entry.kind === "embedding" ? [`input ${formatUsd(p.inputPerMillion)}`]
      : [
          `input ${formatUsd(p.inputPerMillion)}`,
          ...(p.cachedInputPerMillion !== undefined ? [`cached input ${formatUsd(p.cachedInputPerMillion)}`] : []),
          ...(p.cacheWritePerMillion !== undefined ? [`cache write ${formatUsd(p.cacheWritePerMillion)}`] : []),
          `output ${formatUsd(p.outputPerMillion)}`,
        ];
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
