/**
 * Batch limits by execution provider. On CPU a run's cost grows with its tokens almost linearly,
 * so batches of 32 sequences / 8,192 tokens already amortise the weights' trip through memory and
 * keep one run well under a second. A GPU is the other way round: a small batch leaves it mostly
 * idle (one EmbeddingGemma input costs about as much as 32 on an H100, bound by kernel launches),
 * so it gets batches four times larger, under a token budget that keeps the attention's memory in
 * check; jobs of similar length are grouped (batch.ts) so padding stays small. See README
 * "Running on a GPU".
 */
import type { BatchLimits } from "./batch";

export type Provider = "cpu" | "cuda";

export const PROVIDER_BATCH_LIMITS: Readonly<Record<Provider, BatchLimits>> = {
  cpu: { maxBatchSize: 32, maxBatchTokens: 8192 },
  cuda: { maxBatchSize: 128, maxBatchTokens: 32768 },
};

/** The batch limits for the provider a session actually runs on (after any fallback). */
export function batchLimitsFor(provider: Provider): BatchLimits {
  return { ...PROVIDER_BATCH_LIMITS[provider] };
}
