/**
 * Upstream usage as each engine reports it (README, "Pointing it at an inference engine"): the
 * prompt-cache counts are read from every shape — OpenAI's `prompt_tokens_details`, DeepSeek's
 * hit/miss split, Anthropic-style `cache_read_input_tokens` / `cache_creation_input_tokens` —
 * and cut to the prompt when an upstream reports more than it was sent. Bodies are the usage
 * objects each engine sends (field for field, as their APIs document them), for one turn of
 * 10,000 prompt tokens of which 8,000 were cached.
 */
import { describe, expect, test } from "bun:test";
import { readUsage, type ReportedUsage } from "./rewrite";

const SHAPES: [engine: string, usage: Record<string, unknown>, read: ReportedUsage][] = [
  [
    "vLLM with --enable-prompt-tokens-details",
    { prompt_tokens: 10_000, total_tokens: 10_100, completion_tokens: 100, prompt_tokens_details: { cached_tokens: 8_000 } },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000 },
  ],
  [
    "vLLM without it (prompt_tokens_details null)",
    { prompt_tokens: 10_000, total_tokens: 10_100, completion_tokens: 100, prompt_tokens_details: null },
    { inputTokens: 10_000, outputTokens: 100 },
  ],
  [
    "SGLang with --enable-cache-report",
    { prompt_tokens: 10_000, total_tokens: 10_100, completion_tokens: 100, prompt_tokens_details: { cached_tokens: 8_000 }, reasoning_tokens: 0 },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000 },
  ],
  [
    "llama.cpp server",
    { completion_tokens: 100, prompt_tokens: 10_000, total_tokens: 10_100, prompt_tokens_details: { cached_tokens: 8_000 } },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000 },
  ],
  [
    "OpenAI",
    {
      prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100,
      prompt_tokens_details: { cached_tokens: 8_000, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 40, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000, reasoningTokens: 40 },
  ],
  [
    "OpenRouter (reads and writes)",
    {
      prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, cost: 0.0012, is_byok: false,
      prompt_tokens_details: { cached_tokens: 8_000, cache_write_tokens: 1_500, audio_tokens: 0 },
      cost_details: { upstream_inference_cost: null }, completion_tokens_details: { reasoning_tokens: 0, image_tokens: 0 },
    },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000, cacheWriteTokens: 1_500, reasoningTokens: 0 },
  ],
  [
    "DeepSeek (hit/miss only)",
    { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_cache_hit_tokens: 8_000, prompt_cache_miss_tokens: 2_000 },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000 },
  ],
  [
    "DeepSeek (hit/miss and prompt_tokens_details)",
    {
      prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_tokens_details: { cached_tokens: 8_000 },
      prompt_cache_hit_tokens: 8_000, prompt_cache_miss_tokens: 2_000, completion_tokens_details: { reasoning_tokens: 60 },
    },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000, reasoningTokens: 60 },
  ],
  [
    "a DeepSeek-style upstream without prompt_tokens (the two parts make the prompt)",
    { completion_tokens: 100, prompt_cache_hit_tokens: 8_000, prompt_cache_miss_tokens: 2_000 },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000 },
  ],
  [
    "Anthropic-style counts in chat usage (a proxy in front of Claude-style caching)",
    { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, cache_read_input_tokens: 8_000, cache_creation_input_tokens: 1_500 },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000, cacheWriteTokens: 1_500 },
  ],
  [
    "Anthropic-style and OpenAI-style together (LiteLLM): the OpenAI field is read first",
    {
      prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_tokens_details: { cached_tokens: 8_000 },
      cache_read_input_tokens: 8_000, cache_creation_input_tokens: 0,
    },
    { inputTokens: 10_000, outputTokens: 100, cachedTokens: 8_000, cacheWriteTokens: 0 },
  ],
];

describe("readUsage reads every engine's prompt-cache shape", () => {
  test.each(SHAPES)("%s", (_, usage, read) => {
    expect(readUsage({ usage })).toEqual(read);
  });
});

describe("counts above the prompt are cut to it (a hostile upstream gains nothing)", () => {
  test.each([
    ["more cached than the prompt", { prompt_tokens: 100, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 5_000 } }, { cachedTokens: 100 }],
    ["DeepSeek's hit above the prompt", { prompt_tokens: 100, completion_tokens: 1, prompt_cache_hit_tokens: 900, prompt_cache_miss_tokens: 0 }, { cachedTokens: 100 }],
    ["reads and writes above the prompt", { prompt_tokens: 100, completion_tokens: 1, cache_read_input_tokens: 70, cache_creation_input_tokens: 70 }, { cachedTokens: 70, cacheWriteTokens: 30 }],
    ["writes alone above the prompt", { prompt_tokens: 100, completion_tokens: 1, prompt_tokens_details: { cache_write_tokens: 1_000 } }, { cacheWriteTokens: 100 }],
  ] as const)("%s", (_, usage, cut) => {
    expect(readUsage({ usage })).toMatchObject({ inputTokens: 100, ...cut });
  });

  test.each([
    ["negative", -5],
    ["fractional", 1.5],
    ["text", "many"],
    ["a boolean", true],
  ] as const)("a cache count that is %s is ignored, the totals kept", (_, bad) => {
    const read = readUsage({ usage: { prompt_tokens: 100, completion_tokens: 1, prompt_tokens_details: { cached_tokens: bad }, cache_creation_input_tokens: bad } });
    expect(read).toEqual({ inputTokens: 100, outputTokens: 1 });
  });

  test("an odd first field falls through to the next shape", () => {
    expect(readUsage({ usage: { prompt_tokens: 100, completion_tokens: 1, prompt_tokens_details: { cached_tokens: null }, prompt_cache_hit_tokens: 40 } })).toMatchObject({ cachedTokens: 40 });
  });

  test("usage without a usable prompt count is no usage (the gateway counts itself)", () => {
    expect(readUsage({ usage: { completion_tokens: 1, prompt_cache_hit_tokens: 40 } })).toBeNull();
    expect(readUsage({ usage: null })).toBeNull();
  });
});
