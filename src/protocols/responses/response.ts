/**
 * Chat completion → OpenAI Response object. Pure: item ids come from the caller. The same
 * shell (request echo fields) serves the streamed lifecycle events and the stored object.
 */
import { usdNumber } from "../../billing/money";
import type { ChatResult } from "../../chat/pipeline";
import { reasoningOf } from "../anthropic/response";
import type { ResponsesRequest } from "./request";

type Json = Record<string, unknown>;

export interface ResponseShell {
  id: string;
  createdAt: number;
  model: string;
  serviceTier: "default" | "priority";
  request: ResponsesRequest;
}

export type IdMaker = (prefix: string) => string;

/** The response with no output yet (`status: in_progress`), echoing the request's settings. */
export function baseResponse(sh: ResponseShell): Json {
  const r = sh.request;
  return {
    id: sh.id,
    object: "response",
    created_at: sh.createdAt,
    status: "in_progress",
    background: false,
    error: null,
    incomplete_details: null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    metadata: r.metadata ?? {},
    model: sh.model,
    output: [],
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    reasoning: { effort: ((r.reasoning as Json | null | undefined)?.effort as string | undefined) ?? null, summary: null },
    service_tier: sh.serviceTier,
    store: r.store ?? true,
    temperature: r.temperature ?? 1,
    text: { format: (r.text?.format as Json | undefined) ?? { type: "text" } },
    tool_choice: r.tool_choice ?? "auto",
    tools: r.tools ?? [],
    top_p: r.top_p ?? 1,
    truncation: "disabled",
    usage: null,
    user: r.user ?? null,
  };
}

export function responsesUsage(r: ChatResult) {
  return {
    input_tokens: r.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: r.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: r.inputTokens + r.outputTokens,
    cost: usdNumber(r.charged),
  };
}

/** How the turn ended: `length` and `content_filter` leave the response incomplete. */
export function statusOf(finishReason: unknown): { status: "completed" | "incomplete"; incomplete_details: Json | null } {
  if (finishReason === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finishReason === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

export const outputTextPart = (text: string): Json => ({ type: "output_text", text, annotations: [], logprobs: [] });

/** Output items of a chat message: reasoning, then the text message, then function calls. */
export function outputItemsOf(message: Json | undefined, finishReason: unknown, newId: IdMaker): Json[] {
  const items: Json[] = [];
  const m = message ?? {};
  const reasoning = reasoningOf(m);
  if (reasoning) items.push({ id: newId("rs"), type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: reasoning }] });
  if (typeof m.content === "string" && m.content !== "") {
    const status = statusOf(finishReason).status === "incomplete" ? "incomplete" : "completed";
    items.push({ id: newId("msg"), type: "message", status, role: "assistant", content: [outputTextPart(m.content)] });
  }
  for (const call of (m.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function as Json | undefined) ?? {};
    items.push({
      id: newId("fc"), type: "function_call", status: "completed", arguments: typeof fn.arguments === "string" ? fn.arguments : "",
      call_id: newId("call"), name: String(fn.name ?? ""),
    });
  }
  return items;
}

/** The finished response: output, status, usage with our exact cost. */
export function finishedResponse(sh: ResponseShell, output: Json[], finishReason: unknown, result: ChatResult): Json {
  return { ...baseResponse(sh), ...statusOf(finishReason), output, usage: responsesUsage(result) };
}

export function toResponseObject(sh: ResponseShell, chat: Json, result: ChatResult, newId: IdMaker): Json {
  const choice = ((chat.choices as Json[] | undefined) ?? [])[0] ?? {};
  return finishedResponse(sh, outputItemsOf(choice.message as Json | undefined, choice.finish_reason, newId), choice.finish_reason, result);
}
