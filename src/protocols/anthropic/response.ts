/**
 * Chat completion → Anthropic Message. Pure: ids for tool calls come from the caller, so tests
 * can fix them; the upstream's own ids never reach the client.
 */
import { usdNumber } from "../../billing/money";
import type { ChatResult } from "../../chat/call";
import { findStop } from "../stop-sequences";

type Json = Record<string, unknown>;

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal" | "pause_turn";

/**
 * The Anthropic stop reason for a chat finish_reason. Engines that say which stop string matched
 * (vLLM's `stop_reason`, SGLang's `matched_stop`) are believed; otherwise `localMatch` is the stop
 * sequence Switchyard found in the text itself (see ./stop-sequences).
 */
export function stopReasonOf(finishReason: unknown, matched: unknown, stopSequences: readonly string[] = [], localMatch: string | null = null): { stop_reason: StopReason; stop_sequence: string | null } {
  if (localMatch !== null) return { stop_reason: "stop_sequence", stop_sequence: localMatch };
  switch (finishReason) {
    case "length": return { stop_reason: "max_tokens", stop_sequence: null };
    case "tool_calls": case "function_call": return { stop_reason: "tool_use", stop_sequence: null };
    case "content_filter": return { stop_reason: "refusal", stop_sequence: null };
    default:
      if (typeof matched === "string" && stopSequences.includes(matched)) return { stop_reason: "stop_sequence", stop_sequence: matched };
      return { stop_reason: "end_turn", stop_sequence: null };
  }
}

/** The stop string an engine says ended the choice: vLLM's `stop_reason` or SGLang's `matched_stop`. */
export function matchedStopOf(choice: Json): unknown {
  return typeof choice.stop_reason === "string" ? choice.stop_reason : choice.matched_stop ?? null;
}

/**
 * Anthropic's usage object, with the exact cost we charged. Anthropic counts cache reads and cache
 * writes apart from `input_tokens` (the whole prompt is the sum of the three), so for a request
 * that marked cache breakpoints an upstream's cache reads move to `cache_read_input_tokens` and its
 * writes (where it reports them) to `cache_creation_input_tokens`. A request without cache_control
 * did not ask for cache accounting: every input token is `input_tokens` and the cache fields are
 * null (the API's "not applicable"). The charge prices reads and writes at the model's cache
 * prices either way (docs/money.md, "Cached input").
 */
export function anthropicUsage(inputTokens: number, outputTokens: number, r: ChatResult | null, cacheAccounting = true) {
  const read = cacheAccounting ? Math.min(r?.cachedTokens ?? 0, inputTokens) : 0;
  const written = cacheAccounting ? Math.min(r?.cacheWriteTokens ?? 0, inputTokens - read) : 0;
  return {
    input_tokens: inputTokens - read - written,
    cache_creation_input_tokens: cacheAccounting ? written : null,
    cache_read_input_tokens: cacheAccounting ? read : null,
    output_tokens: outputTokens,
    service_tier: r?.serviceTier === "priority" ? "priority" : "standard",
    cost: r ? usdNumber(r.charged) : 0,
  };
}

/** Reasoning text an engine returned (vLLM/SGLang: reasoning_content; others: reasoning). */
export function reasoningOf(m: Json | undefined): string {
  if (!m) return "";
  if (typeof m.reasoning_content === "string") return m.reasoning_content;
  if (typeof m.reasoning === "string") return m.reasoning;
  return "";
}

/** Tool arguments as an object; engines occasionally emit invalid JSON, which becomes {}. */
export function parseToolInput(args: unknown): Json {
  if (typeof args !== "string" || args.trim() === "") return {};
  try {
    const v = JSON.parse(args);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : { value: v };
  } catch {
    return {};
  }
}

export interface MessageOptions {
  id: string;
  model: string;
  result: ChatResult;
  stopSequences?: readonly string[];
  /** The client asked for thinking to be omitted (`thinking.display: "omitted"`). */
  omitThinking?: boolean;
  /** The request marked cache breakpoints: cache reads are reported apart (see anthropicUsage). */
  cacheAccounting?: boolean;
  toolId: () => string;
}

export function toAnthropicMessage(chat: Json, o: MessageOptions): Json {
  const choice = ((chat.choices as Json[] | undefined) ?? [])[0] ?? {};
  const message = (choice.message as Json | undefined) ?? {};
  const content: Json[] = [];
  const thinking = reasoningOf(message);
  if (thinking && !o.omitThinking) content.push({ type: "thinking", thinking, signature: "" });
  let text = typeof message.content === "string" ? message.content : "";
  // A stop sequence in the text (an upstream that ignored it) ends the turn there.
  const hit = findStop(text, o.stopSequences ?? []);
  if (hit) text = text.slice(0, hit.index);
  if (text !== "") content.push({ type: "text", text });
  for (const call of hit ? [] : (message.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function as Json | undefined) ?? {};
    content.push({ type: "tool_use", id: o.toolId(), name: String(fn.name ?? ""), input: parseToolInput(fn.arguments) });
  }
  return {
    id: o.id,
    type: "message",
    role: "assistant",
    model: o.model,
    content,
    ...stopReasonOf(choice.finish_reason, matchedStopOf(choice), o.stopSequences, hit?.stop ?? null),
    usage: anthropicUsage(o.result.inputTokens, o.result.outputTokens, o.result, o.cacheAccounting ?? true),
  };
}
