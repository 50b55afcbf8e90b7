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
  /** Of the input, served from the engine's prefix cache (`prompt_tokens_details.cached_tokens`). */
  cachedTokens?: number;
  /** Of the output, spent reasoning (`completion_tokens_details.reasoning_tokens`). */
  reasoningTokens?: number;
}

/** A detail count when it is a sane integer, clamped to the total it is part of. */
function detail(v: unknown, total: number): number | undefined {
  const n = Number(v);
  return v === undefined || v === null || !Number.isSafeInteger(n) || n < 0 ? undefined : Math.min(n, total);
}

/** Upstream usage, tolerant of missing or odd values. */
export function readUsage(obj: { usage?: unknown }): ReportedUsage | null {
  const u = obj.usage as { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null; completion_tokens_details?: { reasoning_tokens?: unknown } | null } | null | undefined;
  if (!u || typeof u !== "object") return null;
  const prompt = Number(u.prompt_tokens);
  const completion = Number(u.completion_tokens ?? 0);
  if (!Number.isSafeInteger(prompt) || prompt < 0 || !Number.isSafeInteger(completion) || completion < 0) return null;
  const out: ReportedUsage = { inputTokens: prompt, outputTokens: completion };
  const cached = detail(u.prompt_tokens_details?.cached_tokens, prompt);
  const reasoning = detail(u.completion_tokens_details?.reasoning_tokens, completion);
  if (cached !== undefined) out.cachedTokens = cached;
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
