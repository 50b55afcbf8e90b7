/**
 * Anthropic Messages request → chat-completions request. Pure: no I/O, throws DomainError (invalid_request)
 * naming the field for anything the upstream could not be given faithfully.
 */
import { Type, type Static } from "@sinclair/typebox";
import { validate } from "../../validate";
import { badRequest, invalidField, missingField } from "../../errors";
import type { ChatRequest } from "../../chat/request";
import { UPSTREAM_STOP_LIMIT } from "../stop-sequences";
import { chatTools as translateTools, referencedTools, type ChatTools } from "./tools";

/** Anthropic's `output_config.effort` levels. */
const EFFORTS = ["low", "medium", "high", "xhigh", "max"] as const;

const TextBlockParam = Type.Object({ type: Type.Literal("text"), text: Type.String() }, { additionalProperties: true });
const Block = Type.Object({ type: Type.String() }, { additionalProperties: true });

export const AnthropicMessage = Type.Object(
  {
    // Current Claude Code sends `system` entries mid-conversation (kept in place for the upstream).
    role: Type.Union([Type.Literal("user"), Type.Literal("assistant"), Type.Literal("system")]),
    content: Type.Union([Type.String(), Type.Array(Block)], { description: "a string or an array of content blocks" }),
  },
  { additionalProperties: true },
);

const CountFields = {
  model: Type.String({ minLength: 1, description: "A public chat model id from GET /v1/models." }),
  messages: Type.Array(AnthropicMessage, { minItems: 1 }),
  system: Type.Optional(Type.Union([Type.String(), Type.Array(TextBlockParam)], { description: "a string or an array of text blocks" })),
  tools: Type.Optional(Type.Array(Type.Object({ name: Type.Optional(Type.String({ minLength: 1 })), type: Type.Optional(Type.Union([Type.String(), Type.Null()])) }, { additionalProperties: true }))),
  tool_choice: Type.Optional(Type.Object({ type: Type.Union(["auto", "any", "tool", "none"].map((t) => Type.Literal(t))) }, { additionalProperties: true })),
  thinking: Type.Optional(
    Type.Object(
      { type: Type.Union(["enabled", "disabled", "adaptive"].map((t) => Type.Literal(t))), budget_tokens: Type.Optional(Type.Integer({ minimum: 1 })) },
      { additionalProperties: true },
    ),
  ),
  output_config: Type.Optional(
    Type.Object({ effort: Type.Optional(Type.Union(EFFORTS.map((t) => Type.Literal(t)))) }, { additionalProperties: true }),
  ),
};

export const MessagesRequest = Type.Object(
  {
    ...CountFields,
    max_tokens: Type.Integer({ minimum: 1 }),
    stop_sequences: Type.Optional(Type.Array(Type.String())),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_k: Type.Optional(Type.Integer({ minimum: 0 })),
    metadata: Type.Optional(Type.Object({ user_id: Type.Optional(Type.Union([Type.String(), Type.Null()])) }, { additionalProperties: true })),
    stream: Type.Optional(Type.Boolean()),
    service_tier: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export const CountTokensRequest = Type.Object(CountFields, { additionalProperties: true });

export type MessagesRequest = Static<typeof MessagesRequest>;
export type CountTokensRequest = Static<typeof CountTokensRequest>;

export function parseMessagesRequest(body: unknown): MessagesRequest {
  return validate(MessagesRequest, body);
}

export function parseCountTokensRequest(body: unknown): CountTokensRequest {
  return validate(CountTokensRequest, body);
}

/** `thinking.display: "omitted"`: the client wants no thinking text back. */
export function omitsThinking(req: CountTokensRequest): boolean {
  return (req.thinking as Json | undefined)?.display === "omitted";
}

/**
 * Whether the request marks prompt-cache breakpoints (`cache_control` on the system prompt, a
 * message block or a tool). Anthropic reports cache reads only for requests that ask for caching;
 * without it every input token is `input_tokens`. Upstream engines cache prefixes on their own, so
 * cache reads are reported apart only when the client asked for that accounting.
 */
export function usesPromptCache(req: CountTokensRequest): boolean {
  const marked = (v: unknown): boolean => Array.isArray(v) && v.some((b) => typeof b === "object" && b !== null && (b as Json).cache_control != null);
  if (marked(req.system) || marked(req.tools)) return true;
  return req.messages.some((m) => marked((m as Json).content));
}

/** Our extension: "priority" asks for turbo; Anthropic's own "auto"/"standard_only" mean default. */
export function wantsPriorityTier(req: { service_tier?: string }): boolean {
  return req.service_tier === "priority";
}

type Json = Record<string, unknown>;
type ChatMessage = Json & { role: string };

const str = (v: unknown): v is string => typeof v === "string";

function imagePart(block: Json, at: string): Json {
  const source = block.source as Json | undefined;
  if (!source || typeof source !== "object") throw missingField(`${at}.source`);
  if (source.type === "base64") {
    if (!str(source.media_type)) throw missingField(`${at}.source.media_type`);
    if (!str(source.data) || source.data === "") throw missingField(`${at}.source.data`);
    return { type: "image_url", image_url: { url: `data:${source.media_type};base64,${source.data}` } };
  }
  if (source.type === "url") {
    if (!str(source.url)) throw missingField(`${at}.source.url`);
    return { type: "image_url", image_url: { url: source.url } };
  }
  throw invalidField(`${at}.source.type`, 'must be "base64" or "url"');
}

function textOf(block: Json, at: string): string {
  if (!str(block.text)) throw invalidField(`${at}.text`, "must be a string");
  return block.text;
}

/** tool_result content: a string, or text (and image) blocks; chat tool messages carry text. */
function toolResultText(block: Json, at: string): string {
  const c = block.content;
  let text: string;
  if (c === undefined || c === null) text = "";
  else if (str(c)) text = c;
  else if (Array.isArray(c)) {
    text = c
      .map((b: Json, k) => {
        if (b?.type === "text") return textOf(b, `${at}.content[${k}]`);
        if (b?.type === "image") return "[image]";
        // Tool search results load deferred tools; the model is told which ones it may now call.
        if (b?.type === "tool_reference") return `Tool loaded: ${String(b.tool_name ?? "")}`;
        throw invalidField(`${at}.content[${k}].type`, 'must be "text", "image" or "tool_reference"');
      })
      .join("\n");
  } else throw invalidField(`${at}.content`, "must be a string or an array of content blocks");
  return block.is_error === true ? `Error: ${text}` : text;
}

function userMessages(content: string | Json[], at: string, openToolUses: Set<string>): ChatMessage[] {
  if (str(content)) return [{ role: "user", content }];
  if (content.length === 0) throw invalidField(`${at}.content`, "must not be empty");
  const toolMessages: ChatMessage[] = [];
  const parts: Json[] = [];
  content.forEach((block, j) => {
    const here = `${at}.content[${j}]`;
    switch (block.type) {
      case "text": parts.push({ type: "text", text: textOf(block, here) }); break;
      case "image": parts.push(imagePart(block, here)); break;
      case "tool_result": {
        if (!str(block.tool_use_id) || block.tool_use_id === "") throw missingField(`${here}.tool_use_id`);
        if (!openToolUses.has(block.tool_use_id)) {
          throw badRequest(`${here}.tool_use_id`, `${here}: tool_result block(s) provided with tool_use_id '${block.tool_use_id}' which has no matching tool_use block in the previous assistant message.`, "invalid_value");
        }
        openToolUses.delete(block.tool_use_id);
        toolMessages.push({ role: "tool", tool_call_id: block.tool_use_id, content: toolResultText(block, here) });
        break;
      }
      case "document": throw invalidField(`${here}.type`, "document blocks are not supported by this API");
      default:
        // Thinking and redacted-thinking blocks only ever come from the model; nothing to forward.
        if (block.type === "thinking" || block.type === "redacted_thinking") break;
        throw invalidField(`${here}.type`, `"${String(block.type)}" is not a supported user content block (text, image, tool_result)`);
    }
  });
  // Chat templates expect tool answers right after the assistant's calls, before new user text.
  const out = [...toolMessages];
  if (parts.length > 0) out.push({ role: "user", content: parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join("\n") : parts });
  return out;
}

function assistantMessage(content: string | Json[], at: string, toolUses: Set<string>): ChatMessage {
  if (str(content)) return { role: "assistant", content };
  let text = "";
  const calls: Json[] = [];
  content.forEach((block, j) => {
    const here = `${at}.content[${j}]`;
    switch (block.type) {
      case "text": text += textOf(block, here); break;
      case "tool_use": {
        if (!str(block.id) || block.id === "") throw missingField(`${here}.id`);
        if (!str(block.name) || block.name === "") throw missingField(`${here}.name`);
        if (block.input === undefined || block.input === null || typeof block.input !== "object" || Array.isArray(block.input)) {
          throw invalidField(`${here}.input`, "must be an object");
        }
        toolUses.add(block.id);
        calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input) } });
        break;
      }
      case "thinking": case "redacted_thinking": break;
      default: throw invalidField(`${here}.type`, `"${String(block.type)}" is not a supported assistant content block (text, tool_use, thinking)`);
    }
  });
  const m: ChatMessage = { role: "assistant", content: text === "" && calls.length ? null : text };
  if (calls.length) m.tool_calls = calls;
  return m;
}

/** A `system` entry inside `messages`: a string or text blocks, joined like the top-level system. */
function systemMessage(content: string | Json[], at: string): ChatMessage | null {
  if (str(content)) return content === "" ? null : { role: "system", content };
  const text = content
    .map((b, j) => {
      if (b?.type !== "text") throw invalidField(`${at}.content[${j}].type`, 'must be "text" in a system message');
      return textOf(b, `${at}.content[${j}]`);
    })
    .join("\n");
  return text === "" ? null : { role: "system", content: text };
}

/** The chat messages for a Messages conversation (system first). Shared with count_tokens. */
export function toChatMessages(req: CountTokensRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (req.system !== undefined) {
    const system = str(req.system) ? req.system : req.system.map((b) => b.text).join("\n");
    if (system !== "") out.push({ role: "system", content: system });
  }
  let openToolUses = new Set<string>();
  // A system entry between an assistant's tool calls and their results waits until after the
  // results: chat templates (and OpenAI) want tool messages right after the calls.
  let waitingSystem: ChatMessage[] = [];
  req.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    const content = m.content as string | Json[];
    if (m.role === "system") {
      const system = systemMessage(content, at);
      if (system) (openToolUses.size > 0 ? waitingSystem : out).push(system);
    } else if (m.role === "assistant") {
      out.push(...waitingSystem);
      waitingSystem = [];
      openToolUses = new Set();
      out.push(assistantMessage(content, at, openToolUses));
    } else {
      const messages = userMessages(content, at, openToolUses);
      if (waitingSystem.length === 0) out.push(...messages);
      else {
        // Tool results come first in `messages`; the waiting system entries go right after them.
        let results = 0;
        while (results < messages.length && messages[results]!.role === "tool") results++;
        out.push(...messages.slice(0, results), ...waitingSystem, ...messages.slice(results));
        waitingSystem = [];
      }
      openToolUses = new Set();
    }
  });
  out.push(...waitingSystem);
  return out;
}

const NONE: ReadonlySet<string> = new Set();

/** The request's tools for the upstream, and the server tools left out (see ./tools). */
export function chatToolsOf(req: CountTokensRequest): ChatTools {
  const choice = req.tool_choice as Json | undefined;
  const forced = choice?.type === "tool" && str(choice.name) ? choice.name : null;
  const tools = req.tools as Json[] | undefined;
  // Only deferred tools need the walk through the conversation for tool_reference blocks.
  const referenced = tools?.some((t) => t.defer_loading === true) ? referencedTools(req.messages) : NONE;
  return translateTools(tools, referenced, forced);
}

function chatToolChoice(choice: Json | undefined): { tool_choice?: unknown; parallel_tool_calls?: boolean } {
  if (!choice) return {};
  const out: { tool_choice?: unknown; parallel_tool_calls?: boolean } = {};
  switch (choice.type) {
    case "auto": out.tool_choice = "auto"; break;
    case "any": out.tool_choice = "required"; break;
    case "none": out.tool_choice = "none"; break;
    case "tool":
      if (!str(choice.name) || choice.name === "") throw missingField("tool_choice.name");
      out.tool_choice = { type: "function", function: { name: choice.name } };
      break;
  }
  if (choice.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
  return out;
}

/**
 * Extended thinking → the chat-completions reasoning knob. `output_config.effort` says it
 * directly (chat engines know low/medium/high, so xhigh and max ask for high); otherwise it is
 * scaled from the thinking budget. Thinking disabled sends no knob.
 */
function reasoningEffort(req: CountTokensRequest): string | undefined {
  const thinking = req.thinking;
  if (thinking?.type === "disabled") return undefined;
  const effort = req.output_config?.effort;
  if (effort) return effort === "xhigh" || effort === "max" ? "high" : effort;
  if (!thinking) return undefined;
  const budget = thinking.budget_tokens ?? 8_192;
  return budget < 4_096 ? "low" : budget < 16_384 ? "medium" : "high";
}

/** Everything the count_tokens estimate covers besides messages (tool definitions). */
export function countExtras(req: CountTokensRequest): unknown[] {
  return [chatToolsOf(req).tools];
}

/** `translated` is chatToolsOf(req), when the caller needs it too (it is translated once). */
export function toChatRequest(req: MessagesRequest, translated: ChatTools = chatToolsOf(req)): ChatRequest {
  const { tools } = translated;
  if (req.tool_choice && req.tool_choice.type !== "none" && req.tool_choice.type !== "auto" && !tools) {
    throw badRequest("tool_choice", "tool_choice requires tools to be defined.");
  }
  if (req.thinking?.type === "enabled" && req.thinking.budget_tokens !== undefined && req.thinking.budget_tokens >= req.max_tokens) {
    throw invalidField("thinking.budget_tokens", `must be less than max_tokens (${req.max_tokens})`);
  }
  const out: ChatRequest = { model: req.model, messages: toChatMessages(req) as ChatRequest["messages"], max_tokens: req.max_tokens };
  if (tools) out.tools = tools;
  Object.assign(out, chatToolChoice(req.tool_choice as Json | undefined));
  // Every sequence is also matched in the text (../stop-sequences); upstreams take at most four.
  if (req.stop_sequences?.length) out.stop = req.stop_sequences.slice(0, UPSTREAM_STOP_LIMIT);
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.top_k !== undefined) out.top_k = req.top_k;
  if (str(req.metadata?.user_id)) out.user = req.metadata.user_id;
  const effort = reasoningEffort(req);
  if (effort) out.reasoning_effort = effort;
  return out;
}
