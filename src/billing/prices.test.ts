/**
 * Chat prices with a prompt cache (docs/money.md, "Cached input"): uncached input at the input
 * price, cache reads at the cached price, cache writes at the write price, each absent price
 * falling back to the input price; counts above the prompt are cut to it; the hold covers every
 * prompt token at the dearest input price; the charge's note names the prices it used.
 */
import { describe, expect, test } from "bun:test";
import { Catalog, type ModelEntry } from "../catalog/catalog";
import { PRIORITY, STANDARD, formatUsd } from "./money";
import { chatBudget, chatCost, chatPricing, inputParts, priceNote } from "./prices";

function model(pricing: Record<string, string>): ModelEntry {
  const catalog = new Catalog(JSON.stringify({ replace: true, models: [{ id: "m", kind: "chat", owned_by: "lab", context_window: 200_000, pricing }] }));
  return catalog.get("m")!;
}

const usd = (units: number) => formatUsd(units);

describe("chatCost", () => {
  test("the issue's example: 10,000 prompt tokens of which 8,000 cached, 100 out, at 1.00/2.00 and cached 0.10, costs 0.003", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10" });
    expect(usd(chatCost(m, STANDARD, { inputTokens: 10_000, cachedTokens: 8_000, outputTokens: 100 }))).toBe("0.003");
  });

  test("without a cached price, cached tokens cost the input price (as before)", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00" });
    expect(usd(chatCost(m, STANDARD, { inputTokens: 10_000, cachedTokens: 8_000, outputTokens: 100 }))).toBe("0.0102");
  });

  test("cache writes cost the write price, reads the cached price, the rest the input price", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10", cache_write_per_million: "1.25" });
    // 2,000 uncached × 1 + 6,000 read × 0.1 + 2,000 written × 1.25 + 100 out × 2 = 2,000 + 600 + 2,500 + 200 µUSD
    expect(usd(chatCost(m, STANDARD, { inputTokens: 10_000, cachedTokens: 6_000, cacheWriteTokens: 2_000, outputTokens: 100 }))).toBe("0.0053");
    // The priority tier is 1.5x of all of it.
    expect(usd(chatCost(m, PRIORITY, { inputTokens: 10_000, cachedTokens: 6_000, cacheWriteTokens: 2_000, outputTokens: 100 }))).toBe("0.00795");
  });

  test("a write price alone leaves reads at the input price", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00", cache_write_per_million: "1.25" });
    expect(usd(chatCost(m, STANDARD, { inputTokens: 1_000, cachedTokens: 500, cacheWriteTokens: 500, outputTokens: 0 }))).toBe("0.001125");
  });

  test.each([
    ["more cached than the prompt", { inputTokens: 1_000, cachedTokens: 5_000 }, { uncached: 0, cached: 1_000, written: 0 }],
    ["reads and writes past the prompt", { inputTokens: 1_000, cachedTokens: 600, cacheWriteTokens: 900 }, { uncached: 0, cached: 600, written: 400 }],
    ["writes alone past the prompt", { inputTokens: 1_000, cacheWriteTokens: 1_500 }, { uncached: 0, cached: 0, written: 1_000 }],
    ["no cache fields", { inputTokens: 1_000 }, { uncached: 1_000, cached: 0, written: 0 }],
  ] as const)("%s: counts above the prompt are cut to it", (_, usage, parts) => {
    expect(inputParts({ outputTokens: 0, ...usage })).toEqual(parts);
  });

  test("a hostile count above the prompt never makes the prompt cheaper than all of it cached", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10" });
    const allCached = chatCost(m, STANDARD, { inputTokens: 10_000, cachedTokens: 10_000, outputTokens: 0 });
    expect(chatCost(m, STANDARD, { inputTokens: 10_000, cachedTokens: 1_000_000, outputTokens: 0 })).toBe(allCached);
    expect(usd(allCached)).toBe("0.001");
  });
});

describe("chatBudget: the hold covers the dearest input price", () => {
  const pricing = (u: Parameters<ReturnType<typeof chatPricing>>[0], m: ModelEntry) => chatPricing(m, STANDARD)(u);

  test("cache prices below the input price: every prompt token at the input price", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10" });
    expect(chatBudget(m, 10_000, 100)).toEqual({ inputTokens: 10_000, outputTokens: 100 });
    expect(usd(pricing(chatBudget(m, 10_000, 100), m))).toBe("0.0102");
  });

  test("a write price above the input price: every prompt token at the write price", () => {
    const m = model({ input_per_million: "0.30", output_per_million: "1.20", cached_input_per_million: "0.03", cache_write_per_million: "0.375" });
    const budget = chatBudget(m, 10_000, 100);
    expect(budget).toEqual({ inputTokens: 10_000, outputTokens: 100, cacheWriteTokens: 10_000 });
    expect(usd(pricing(budget, m))).toBe("0.00387");
    // The most honest usage can cost (every prompt token written) fits the hold exactly.
    expect(pricing({ inputTokens: 10_000, cacheWriteTokens: 10_000, outputTokens: 100 }, m)).toBe(pricing(budget, m));
  });

  test("a cached price above the input price (an odd catalog): every prompt token at the cached price", () => {
    const m = model({ input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "1.50" });
    expect(chatBudget(m, 1_000, 0)).toEqual({ inputTokens: 1_000, outputTokens: 0, cachedTokens: 1_000 });
  });
});

describe("priceNote", () => {
  test("names the cache prices a model has, and only those", () => {
    expect(priceNote(model({ input_per_million: "1", output_per_million: "2" }), STANDARD)).toBe("price per 1M USD: input 1, output 2");
    expect(priceNote(model({ input_per_million: "1", output_per_million: "2", cached_input_per_million: "0.1" }), STANDARD)).toBe("price per 1M USD: input 1, cached input 0.1, output 2");
    expect(priceNote(model({ input_per_million: "0.3", output_per_million: "1.2", cached_input_per_million: "0.03", cache_write_per_million: "0.375" }), PRIORITY))
      .toBe("price per 1M USD: input 0.3, cached input 0.03, cache write 0.375, output 1.2, x1.5");
  });
});
