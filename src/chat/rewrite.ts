/**
 * Rewrites upstream chat objects so nothing upstream leaks: our id, the public model id the
 * client asked for, the tier we served, and no fingerprint of the backend.
 */
export interface Rewrite {
  id: string;
  model: string;
  serviceTier: "default" | "priority";
}

type ChatObject = Record<string, unknown>;

export function rewriteChatObject(obj: ChatObject, r: Rewrite): ChatObject {
  obj.id = r.id;
  obj.model = r.model;
  obj.service_tier = r.serviceTier;
  delete obj.system_fingerprint;
  // Some engines name themselves in extension fields; only standard fields go out.
  delete obj.prompt_logprobs;
  delete obj.kv_transfer_params;
  return obj;
}

/** Token counts an upstream reported, as a charge records them: totals, plus the details some engines add. */
export interface ReportedUsage {
  inputTokens: number;
  outputTokens: number;
  /** Of the input, read from the engine's prompt cache (README, "Pointing it at an inference engine"). */
  cachedTokens?: number;
  /** Of the input, written to the engine's prompt cache. */
  cacheWriteTokens?: number;
  /** Of the output, spent reasoning (`completion_tokens_details.reasoning_tokens`). */
  reasoningTokens?: number;
}

type UsageObject = {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  prompt_tokens_details?: { cached_tokens?: unknown; cache_write_tokens?: unknown } | null;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
  prompt_cache_hit_tokens?: unknown;
  prompt_cache_miss_tokens?: unknown;
  cache_read_input_tokens?: unknown;
  cache_creation_input_tokens?: unknown;
};

/** A count when it is a sane integer (else undefined). */
function count(v: unknown): number | undefined {
  if (v === undefined || v === null || typeof v === "boolean") return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The first of `values` that is a sane count, cut to `total` (a detail is a part of its total). */
function detail(total: number, ...values: unknown[]): number | undefined {
  for (const v of values) {
    const n = count(v);
    if (n !== undefined) return Math.min(n, total);
  }
  return undefined;
}

/**
 * Upstream usage, tolerant of missing or odd values. `prompt_tokens` is the whole prompt, as in
 * OpenAI's shape; the prompt-cache counts are read from whichever shape the engine uses:
 *   reads:  `prompt_tokens_details.cached_tokens` (OpenAI, vLLM, SGLang, llama.cpp, OpenRouter),
 *           `prompt_cache_hit_tokens` (DeepSeek), `cache_read_input_tokens` (Anthropic-style);
 *   writes: `prompt_tokens_details.cache_write_tokens` (OpenRouter), `cache_creation_input_tokens`.
 * Reads and writes together are cut to the prompt (reads first): an upstream that reports more
 * cached tokens than it was sent makes no prompt cheaper than all-cached.
 */
export function readUsage(obj: { usage?: unknown }): ReportedUsage | null {
  const u = obj.usage as UsageObject | null | undefined;
  if (!u || typeof u !== "object") return null;
  // DeepSeek's two parts add up to the prompt; an engine that sent only them still has one.
  const hit = count(u.prompt_cache_hit_tokens);
  const miss = count(u.prompt_cache_miss_tokens);
  const prompt = u.prompt_tokens === undefined && hit !== undefined && miss !== undefined ? hit + miss : Number(u.prompt_tokens);
  const completion = Number(u.completion_tokens ?? 0);
  if (!Number.isSafeInteger(prompt) || prompt < 0 || !Number.isSafeInteger(completion) || completion < 0) return null;
  const out: ReportedUsage = { inputTokens: prompt, outputTokens: completion };
  const details = u.prompt_tokens_details && typeof u.prompt_tokens_details === "object" ? u.prompt_tokens_details : {};
  const cached = detail(prompt, details.cached_tokens, hit, u.cache_read_input_tokens);
  const written = detail(prompt - (cached ?? 0), details.cache_write_tokens, u.cache_creation_input_tokens);
  const reasoning = detail(completion, u.completion_tokens_details?.reasoning_tokens);
  if (cached !== undefined) out.cachedTokens = cached;
  if (written !== undefined) out.cacheWriteTokens = written;
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}

/** The text a chunk or message delivers (content, reasoning, tool-call names and arguments). */
export function deliveredText(choiceDelta: Record<string, unknown> | undefined): string {
  if (!choiceDelta) return "";
  let s = "";
  if (typeof choiceDelta.content === "string") s += choiceDelta.content;
  if (typeof choiceDelta.reasoning_content === "string") s += choiceDelta.reasoning_content;
  if (typeof choiceDelta.reasoning === "string") s += choiceDelta.reasoning;
  const calls = choiceDelta.tool_calls as { function?: { name?: unknown; arguments?: unknown } }[] | undefined;
  if (Array.isArray(calls)) {
    for (const c of calls) {
      if (typeof c?.function?.name === "string") s += c.function.name;
      if (typeof c?.function?.arguments === "string") s += c.function.arguments;
    }
  }
  return s;
}
