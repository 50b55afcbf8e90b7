import { expect, test } from "bun:test";
import { selectBatch } from "./batch";
import { batchLimitsFor } from "./provider-batching";

test.each([
  ["cpu", 32, 8192],
  ["cuda", 128, 32768],
] as const)("%s: batches of up to %d sequences and %d tokens", (provider, size, tokens) => {
  expect(batchLimitsFor(provider)).toEqual({ maxBatchSize: size, maxBatchTokens: tokens });
});

// 200 queued sequences of 40–64 tokens: what one batch takes on each provider.
const queue = Array.from({ length: 200 }, (_, i) => ({ cost: 40 + ((i * 7) % 25), seq: i }));

test.each([
  ["cpu", 32],
  ["cuda", 128],
] as const)("%s: a full queue of short inputs gives a batch of %d", (provider, expected) => {
  const batch = selectBatch([], queue, batchLimitsFor(provider));
  expect(batch.length).toBe(expected);
  // Grouped by length: sorted ascending, within the token budget.
  expect(batch.map((c) => c.cost)).toEqual([...batch.map((c) => c.cost)].sort((a, b) => a - b));
  expect(batch.reduce((n, c) => n + c.cost, 0)).toBeLessThanOrEqual(batchLimitsFor(provider).maxBatchTokens);
});

test.each([
  ["cpu", 4],
  ["cuda", 16],
] as const)("%s: long inputs (2,000 tokens) stop at the token budget: %d per batch", (provider, expected) => {
  const long = Array.from({ length: 40 }, (_, i) => ({ cost: 2000, seq: i }));
  expect(selectBatch([], long, batchLimitsFor(provider)).length).toBe(expected);
});

test("the table is a copy: changing one engine's limits changes no other's", () => {
  const a = batchLimitsFor("cuda");
  a.maxBatchSize = 1;
  expect(batchLimitsFor("cuda").maxBatchSize).toBe(128);
});
