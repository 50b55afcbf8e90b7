/**
 * Chat completion → Anthropic Message. Pure: ids for tool calls come from the caller, so tests
 * can fix them; the upstream's own ids never reach the client.
 */
import { usdNumber } from "../../billing/money";
import type { ChatResult } from "../../chat/pipeline";

type Json = Record<string, unknown>;

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal" | "pause_turn";

/**
 * The Anthropic stop reason for a chat finish_reason. Engines like vLLM report which stop string
 * matched in the choice's `stop_reason`; that is the only way to tell a stop sequence from the end.
 */
export function stopReasonOf(finishReason: unknown, matched: unknown, stopSequences: readonly string[] = []): { stop_reason: StopReason; stop_sequence: string | null } {
  switch (finishReason) {
    case "length": return { stop_reason: "max_tokens", stop_sequence: null };
    case "tool_calls": case "function_call": return { stop_reason: "tool_use", stop_sequence: null };
    case "content_filter": return { stop_reason: "refusal", stop_sequence: null };
    default:
      if (typeof matched === "string" && stopSequences.includes(matched)) return { stop_reason: "stop_sequence", stop_sequence: matched };
      return { stop_reason: "end_turn", stop_sequence: null };
  }
}

/** Anthropic's usage object, with the exact cost we charged. */
export function anthropicUsage(inputTokens: number, outputTokens: number, r: ChatResult | null) {
  return {
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
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
  toolId: () => string;
}

export function toAnthropicMessage(chat: Json, o: MessageOptions): Json {
  const choice = ((chat.choices as Json[] | undefined) ?? [])[0] ?? {};
  const message = (choice.message as Json | undefined) ?? {};
  const content: Json[] = [];
  const thinking = reasoningOf(message);
  if (thinking) content.push({ type: "thinking", thinking, signature: "" });
  if (typeof message.content === "string" && message.content !== "") content.push({ type: "text", text: message.content });
  for (const call of (message.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function as Json | undefined) ?? {};
    content.push({ type: "tool_use", id: o.toolId(), name: String(fn.name ?? ""), input: parseToolInput(fn.arguments) });
  }
  return {
    id: o.id,
    type: "message",
    role: "assistant",
    model: o.model,
    content,
    ...stopReasonOf(choice.finish_reason, choice.stop_reason, o.stopSequences),
    usage: anthropicUsage(o.result.inputTokens, o.result.outputTokens, o.result),
  };
}
