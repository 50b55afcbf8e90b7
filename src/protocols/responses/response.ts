/**
 * Chat completion → OpenAI Response object. Pure: item ids come from the caller. The same
 * shell (request echo fields) serves the streamed lifecycle events and the stored object.
 *
 * Every field of OpenAI's Response object is present (null where this API has nothing to
 * say), in bodies and in the response.created / .in_progress / .completed events, so strict
 * clients and schema checks accept it. Fields that only OpenAI's hosted features fill (image
 * settings, prompt-cache diagnostics, hosted-tool usage) are left out rather than invented.
 */
import { usdNumber } from "../../billing/money";
import type { ChatResult } from "../../chat/call";
import { reasoningOf } from "../anthropic/response";
import type { ResponsesRequest } from "./request";
import type { ToolName } from "./tools";

type Json = Record<string, unknown>;

export interface ResponseShell {
  id: string;
  createdAt: number;
  model: string;
  serviceTier: "default" | "priority";
  request: ResponsesRequest;
  /** Chat tool name → the client's name and namespace (flattened namespace tools). */
  toolNames?: ReadonlyMap<string, ToolName>;
}

export type IdMaker = (prefix: string) => string;

const SUMMARIES = ["auto", "concise", "detailed"];

/** The summary setting a request asked for (`reasoning.summary`, or the older `generate_summary`). */
export function summaryRequested(r: ResponsesRequest): string | null {
  const reasoning = r.reasoning as Json | null | undefined;
  const asked = reasoning?.summary ?? reasoning?.generate_summary;
  return typeof asked === "string" && SUMMARIES.includes(asked) ? asked : null;
}

/** Function tools as OpenAI echoes them: `parameters` and `strict` always present (null when not given). */
function echoTool(t: Json): Json {
  if (t?.type === "function") return { ...t, parameters: t.parameters ?? null, strict: typeof t.strict === "boolean" ? t.strict : null };
  if (t?.type === "namespace" && Array.isArray(t.tools)) return { ...t, description: t.description ?? "", tools: (t.tools as Json[]).map(echoTool) };
  return t;
}

export function echoTools(tools: Json[] | null | undefined): Json[] {
  return (tools ?? []).map(echoTool);
}

/** The response with no output yet (`status: in_progress`), echoing the request's settings. */
export function baseResponse(sh: ResponseShell): Json {
  const r = sh.request as ResponsesRequest & Json;
  const num = (v: unknown, fallback: number | null) => (typeof v === "number" ? v : fallback);
  const strOrNull = (v: unknown) => (typeof v === "string" ? v : null);
  const text = (r.text ?? {}) as Json;
  const out: Json = {
    id: sh.id,
    object: "response",
    created_at: sh.createdAt,
    status: "in_progress",
    background: false,
    completed_at: null,
    conversation: null,
    error: null,
    incomplete_details: null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    max_tool_calls: num(r.max_tool_calls, null),
    metadata: r.metadata ?? {},
    model: sh.model,
    output: [],
    output_text: "",
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    presence_penalty: num(r.presence_penalty, 0),
    frequency_penalty: num(r.frequency_penalty, 0),
    previous_response_id: r.previous_response_id ?? null,
    prompt: null,
    prompt_cache_key: strOrNull(r.prompt_cache_key),
    prompt_cache_retention: r.prompt_cache_retention === "in_memory" || r.prompt_cache_retention === "24h" ? r.prompt_cache_retention : null,
    reasoning: { effort: ((r.reasoning as Json | null | undefined)?.effort as string | undefined) ?? null, summary: summaryRequested(r) },
    safety_identifier: strOrNull(r.safety_identifier),
    service_tier: sh.serviceTier,
    store: r.store ?? true,
    temperature: r.temperature ?? 1,
    text: { format: (text.format as Json | undefined) ?? { type: "text" }, verbosity: text.verbosity ?? "medium" },
    tool_choice: r.tool_choice ?? "auto",
    tools: echoTools(r.tools as Json[] | null | undefined),
    top_logprobs: num(r.top_logprobs, 0),
    top_p: r.top_p ?? 1,
    truncation: r.truncation === "auto" ? "auto" : "disabled",
    // null until the turn ends, as OpenAI sends it (the Open Responses spec requires the key).
    usage: null,
    access_programs: null,
    moderation: null,
  };
  // OpenAI's own type declares `user` a string, never null: present only when the client set it.
  if (typeof r.user === "string") out.user = r.user;
  return out;
}

export function responsesUsage(r: ChatResult) {
  return {
    input_tokens: r.inputTokens,
    input_tokens_details: { cached_tokens: r.cachedTokens ?? 0, cache_write_tokens: r.cacheWriteTokens ?? 0 },
    output_tokens: r.outputTokens,
    output_tokens_details: { reasoning_tokens: r.reasoningTokens ?? 0 },
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

/**
 * A reasoning item; with a summary asked for, the reasoning text is its summary too. No
 * `encrypted_content`: the Responses schema has it absent or a string, and there is none to give.
 */
export function reasoningItem(id: string, text: string, summary: boolean): Json {
  return { id, type: "reasoning", summary: summary ? [{ type: "summary_text", text }] : [], content: [{ type: "reasoning_text", text }] };
}

/** A function_call item naming the client's tool (inner name plus namespace for flattened tools). */
export function functionCallItem(sh: ResponseShell, id: string, callId: string, chatName: string, args: string, status: string): Json {
  const tool = sh.toolNames?.get(chatName);
  const item: Json = { id, type: "function_call", status, arguments: args, call_id: callId, name: tool?.name ?? chatName };
  if (tool?.namespace) item.namespace = tool.namespace;
  return item;
}

/** Output items of a chat message: reasoning, then the text message, then function calls. */
export function outputItemsOf(sh: ResponseShell, message: Json | undefined, finishReason: unknown, newId: IdMaker): Json[] {
  const items: Json[] = [];
  const m = message ?? {};
  const reasoning = reasoningOf(m);
  if (reasoning) items.push(reasoningItem(newId("rs"), reasoning, summaryRequested(sh.request) !== null));
  if (typeof m.content === "string" && m.content !== "") {
    const status = statusOf(finishReason).status === "incomplete" ? "incomplete" : "completed";
    items.push({ id: newId("msg"), type: "message", status, role: "assistant", content: [outputTextPart(m.content)] });
  }
  for (const call of (m.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function as Json | undefined) ?? {};
    items.push(functionCallItem(sh, newId("fc"), newId("call"), String(fn.name ?? ""), typeof fn.arguments === "string" ? fn.arguments : "", "completed"));
  }
  return items;
}

/** The text of every output message, joined (the SDKs' `output_text`). */
export function outputTextOf(output: Json[]): string {
  let text = "";
  for (const item of output) {
    if (item.type !== "message") continue;
    for (const part of (item.content as Json[] | undefined) ?? []) if (part.type === "output_text") text += String(part.text ?? "");
  }
  return text;
}

/** The finished response: output, status, usage with our exact cost. */
export function finishedResponse(sh: ResponseShell, output: Json[], finishReason: unknown, result: ChatResult, completedAt: number): Json {
  const status = statusOf(finishReason);
  return {
    ...baseResponse(sh), ...status, completed_at: status.status === "completed" ? completedAt : null,
    output, output_text: outputTextOf(output), usage: responsesUsage(result),
  };
}

export function toResponseObject(sh: ResponseShell, chat: Json, result: ChatResult, newId: IdMaker, completedAt = Math.floor(Date.now() / 1000)): Json {
  const choice = ((chat.choices as Json[] | undefined) ?? [])[0] ?? {};
  return finishedResponse(sh, outputItemsOf(sh, choice.message as Json | undefined, choice.finish_reason, newId), choice.finish_reason, result, completedAt);
}
