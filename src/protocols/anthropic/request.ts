/**
 * Anthropic Messages request → chat-completions request. Pure: no I/O, throws DomainError (invalid_request)
 * naming the field for anything the upstream could not be given faithfully.
 */
import { Type, type Static } from "@sinclair/typebox";
import { validate } from "../../validate";
import { badRequest, invalidField, missingField } from "../../errors";
import type { ChatRequest } from "../../chat/request";

const TextBlockParam = Type.Object({ type: Type.Literal("text"), text: Type.String() }, { additionalProperties: true });
const Block = Type.Object({ type: Type.String() }, { additionalProperties: true });

export const AnthropicMessage = Type.Object(
  {
    role: Type.Union([Type.Literal("user"), Type.Literal("assistant")]),
    content: Type.Union([Type.String(), Type.Array(Block)], { description: "a string or an array of content blocks" }),
  },
  { additionalProperties: true },
);

const CountFields = {
  model: Type.String({ minLength: 1, description: "A public chat model id from GET /v1/models." }),
  messages: Type.Array(AnthropicMessage, { minItems: 1 }),
  system: Type.Optional(Type.Union([Type.String(), Type.Array(TextBlockParam)], { description: "a string or an array of text blocks" })),
  tools: Type.Optional(Type.Array(Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: true }))),
  tool_choice: Type.Optional(Type.Object({ type: Type.Union(["auto", "any", "tool", "none"].map((t) => Type.Literal(t))) }, { additionalProperties: true })),
  thinking: Type.Optional(
    Type.Object(
      { type: Type.Union(["enabled", "disabled", "adaptive"].map((t) => Type.Literal(t))), budget_tokens: Type.Optional(Type.Integer({ minimum: 1 })) },
      { additionalProperties: true },
    ),
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
        throw invalidField(`${at}.content[${k}].type`, 'must be "text" or "image"');
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

/** The chat messages for a Messages conversation (system first). Shared with count_tokens. */
export function toChatMessages(req: CountTokensRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (req.system !== undefined) {
    const system = str(req.system) ? req.system : req.system.map((b) => b.text).join("\n");
    if (system !== "") out.push({ role: "system", content: system });
  }
  let openToolUses = new Set<string>();
  req.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    const content = m.content as string | Json[];
    if (m.role === "assistant") {
      openToolUses = new Set();
      out.push(assistantMessage(content, at, openToolUses));
    } else {
      out.push(...userMessages(content, at, openToolUses));
      openToolUses = new Set();
    }
  });
  return out;
}

function chatTools(req: CountTokensRequest): Json[] | undefined {
  if (!req.tools) return undefined;
  return req.tools.map((t: Json, i) => {
    if (t.type !== undefined && t.type !== "custom") {
      throw invalidField(`tools[${i}].type`, `server tool "${String(t.type)}" is not supported; define a client tool with name, description and input_schema`);
    }
    const schema = t.input_schema;
    if (!schema || typeof schema !== "object" || Array.isArray(schema)) throw missingField(`tools[${i}].input_schema`);
    const fn: Json = { name: t.name, parameters: schema };
    if (str(t.description)) fn.description = t.description;
    return { type: "function", function: fn };
  });
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

/** Extended thinking → the chat-completions reasoning knob, scaled from the budget. */
function reasoningEffort(thinking: CountTokensRequest["thinking"]): string | undefined {
  if (!thinking || thinking.type === "disabled") return undefined;
  const budget = thinking.budget_tokens ?? 8_192;
  return budget < 4_096 ? "low" : budget < 16_384 ? "medium" : "high";
}

/** Everything the count_tokens estimate covers besides messages (tool definitions). */
export function countExtras(req: CountTokensRequest): unknown[] {
  return [chatTools(req)];
}

export function toChatRequest(req: MessagesRequest): ChatRequest {
  const tools = chatTools(req);
  if (req.tool_choice && req.tool_choice.type !== "none" && req.tool_choice.type !== "auto" && !tools) {
    throw badRequest("tool_choice", "tool_choice requires tools to be defined.");
  }
  if (req.thinking?.type === "enabled" && req.thinking.budget_tokens !== undefined && req.thinking.budget_tokens >= req.max_tokens) {
    throw invalidField("thinking.budget_tokens", `must be less than max_tokens (${req.max_tokens})`);
  }
  const out: ChatRequest = { model: req.model, messages: toChatMessages(req) as ChatRequest["messages"], max_tokens: req.max_tokens };
  if (tools) out.tools = tools;
  Object.assign(out, chatToolChoice(req.tool_choice as Json | undefined));
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.top_k !== undefined) out.top_k = req.top_k;
  if (str(req.metadata?.user_id)) out.user = req.metadata.user_id;
  const effort = reasoningEffort(req.thinking);
  if (effort) out.reasoning_effort = effort;
  return out;
}
