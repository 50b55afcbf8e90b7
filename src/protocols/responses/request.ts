/**
 * OpenAI Responses request → chat-completions request. Pure: input items (and the items of a
 * stored conversation) become chat messages; anything that cannot be given to a chat upstream
 * faithfully is a 400 naming the field.
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { validate } from "../../validate";
import { badRequest, invalidField, missingField } from "../../errors";
import type { ChatRequest } from "../../chat/request";
import { chatToolChoice, responsesTools, type ResponsesTools } from "./tools";

type Json = Record<string, unknown>;

const Nullable = <T extends TSchema>(t: T, description: string) => Type.Optional(Type.Union([t, Type.Null()], { description }));

export const ResponsesRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, description: "A public chat model id from GET /v1/models." }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Object({}, { additionalProperties: true }))], { description: "a string or an array of input items" })),
    instructions: Nullable(Type.String(), "a string or null"),
    tools: Type.Optional(Type.Union([Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true })), Type.Null()], { description: "an array of tools or null" })),
    tool_choice: Type.Optional(
      Type.Union([Type.Literal("auto"), Type.Literal("none"), Type.Literal("required"), Type.Object({ type: Type.String() }, { additionalProperties: true })], {
        description: '"auto", "none", "required" or {"type":"function","name":...}',
      }),
    ),
    max_output_tokens: Nullable(Type.Integer({ minimum: 1 }), "a positive integer or null"),
    text: Type.Optional(Type.Union([Type.Object({ format: Type.Optional(Type.Object({ type: Type.String() }, { additionalProperties: true })) }, { additionalProperties: true }), Type.Null()], { description: "an object or null" })),
    temperature: Nullable(Type.Number({ minimum: 0, maximum: 2 }), "a number between 0 and 2, or null"),
    top_p: Nullable(Type.Number({ minimum: 0, maximum: 1 }), "a number between 0 and 1, or null"),
    store: Nullable(Type.Boolean(), "a boolean or null"),
    previous_response_id: Nullable(Type.String({ minLength: 1 }), "a response id or null"),
    stream: Nullable(Type.Boolean(), "a boolean or null"),
    metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], { description: "an object of string values, or null" })),
    service_tier: Nullable(Type.String(), "a string or null"),
    parallel_tool_calls: Nullable(Type.Boolean(), "a boolean or null"),
    reasoning: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: "an object or null" })),
    user: Nullable(Type.String(), "a string or null"),
  },
  { additionalProperties: true },
);

export type ResponsesRequest = Static<typeof ResponsesRequest>;

export function parseResponsesRequest(body: unknown): ResponsesRequest {
  const req = validate(ResponsesRequest, body);
  if (req.input === undefined && !req.previous_response_id) throw missingField("input");
  if (req.metadata && Object.keys(req.metadata).length > 16) throw invalidField("metadata", "must have at most 16 keys");
  // Background responses would need a job queue and polling; say so instead of answering in the foreground.
  if ((req as Json).background === true) throw invalidField("background", "background responses are not supported; omit it or set it to false");
  return req;
}

export function wantsPriorityTier(req: ResponsesRequest): boolean {
  return req.service_tier === "priority";
}

const str = (v: unknown): v is string => typeof v === "string";

/** The item types a Responses conversation may hold here. */
const ROLES = ["user", "assistant", "system", "developer"];

/** Looks up an item the account stored earlier (an output or input item of a stored response). */
export type ItemLookup = (id: string) => Json | null;

/**
 * The request's input as stored items: a string becomes one user message; message content
 * strings become typed parts; every item gets an id (OpenAI lists input items with ids).
 * `item_reference` items are replaced by the stored item they name (`lookup`); an id this
 * account never stored is a 400 naming it.
 */
export function normalizeInput(input: ResponsesRequest["input"], itemId: (prefix: string) => string, lookup: ItemLookup = () => null): Json[] {
  if (input === undefined) return [];
  if (str(input)) return [{ id: itemId("msg"), type: "message", role: "user", status: "completed", content: [{ type: "input_text", text: input }] }];
  return input.map((raw, j) => {
    let item = raw as Json;
    const at = `input[${j}]`;
    if (item.type === "item_reference") {
      if (!str(item.id) || item.id === "") throw missingField(`${at}.id`);
      const found = lookup(item.id);
      if (!found) throw badRequest(`${at}.id`, `Item with id '${item.id}' not found.`, "invalid_value");
      if (found.type === "item_reference") throw invalidField(`${at}.id`, "must name a stored item, not another reference");
      item = found;
    }
    const type = item.type ?? (item.role !== undefined ? "message" : undefined);
    if (type === "message") {
      if (!str(item.role) || !ROLES.includes(item.role)) throw invalidField(`${at}.role`, `must be one of ${ROLES.map((r) => JSON.stringify(r)).join(", ")}`);
      const partType = item.role === "assistant" ? "output_text" : "input_text";
      const content = str(item.content) ? [{ type: partType, text: item.content }] : item.content;
      if (!Array.isArray(content)) throw invalidField(`${at}.content`, "must be a string or an array of content parts");
      return { ...item, id: str(item.id) ? item.id : itemId("msg"), type, status: item.status ?? "completed", content };
    }
    if (type === "function_call") {
      for (const f of ["call_id", "name", "arguments"]) if (!str(item[f])) throw missingField(`${at}.${f}`);
      return { ...item, id: str(item.id) ? item.id : itemId("fc"), status: item.status ?? "completed" };
    }
    if (type === "function_call_output") {
      if (!str(item.call_id)) throw missingField(`${at}.call_id`);
      if (!str(item.output) && !Array.isArray(item.output)) throw invalidField(`${at}.output`, "must be a string or an array of content parts");
      return { ...item, id: str(item.id) ? item.id : itemId("fco"), status: item.status ?? "completed" };
    }
    if (type === "reasoning") return { ...item, id: str(item.id) ? item.id : itemId("rs") };
    if (type === undefined) throw missingField(`${at}.type`);
    throw invalidField(`${at}.type`, `"${String(type)}" is not a supported input item type (message, function_call, function_call_output, reasoning, item_reference)`);
  });
}

function partsOf(content: Json[], at: string, role: string): Json[] {
  return content.map((p, k) => {
    const here = `${at}.content[${k}]`;
    switch (p?.type) {
      case "input_text": case "output_text": case "text":
        if (!str(p.text)) throw invalidField(`${here}.text`, "must be a string");
        return { type: "text", text: p.text };
      case "refusal":
        return { type: "text", text: str(p.refusal) ? p.refusal : "" };
      case "input_image": {
        if (role !== "user") throw invalidField(`${here}.type`, "images are only accepted in user messages");
        if (!str(p.image_url) || p.image_url === "") throw invalidField(`${here}.image_url`, "must be a URL or a data: URL (file_id is not supported)");
        const image: Json = { url: p.image_url };
        if (str(p.detail)) image.detail = p.detail;
        return { type: "image_url", image_url: image };
      }
      default:
        throw invalidField(`${here}.type`, `"${String(p?.type)}" is not a supported content part (input_text, input_image, output_text)`);
    }
  });
}

function flatten(parts: Json[]): string | Json[] {
  return parts.every((p) => p.type === "text") ? parts.map((p) => p.text as string).join("") : parts;
}

function outputText(output: unknown, at: string): string {
  if (str(output)) return output;
  return (output as Json[])
    .map((p, k) => {
      if (p?.type === "input_text" || p?.type === "output_text") return str(p.text) ? p.text : "";
      // Chat tool messages carry text only; an image a tool returned (Codex's view_image) is named.
      if (p?.type === "input_image") return "[image]";
      throw invalidField(`${at}.output[${k}].type`, 'must be "input_text" or "input_image"');
    })
    .join("");
}

export interface LabelledItem {
  item: Json;
  /** Where the item came from, for error messages ("input[2]"). */
  at: string;
}

/** Normalized items (a stored conversation, then this request's input) → chat messages. */
export function itemsToChatMessages(items: LabelledItem[], tools: ResponsesTools = responsesTools(undefined)): Json[] {
  const out: Json[] = [];
  const calls = new Set<string>();
  for (const { item, at } of items) {
    switch (item.type) {
      case "message": {
        const role = item.role === "developer" ? "system" : (item.role as string);
        const content = flatten(partsOf(item.content as Json[], at, role));
        out.push({ role, content: role === "user" ? content : typeof content === "string" ? content : (content as Json[]).map((p) => p.text ?? "").join("") });
        break;
      }
      case "function_call": {
        const call = { id: item.call_id, type: "function", function: { name: tools.chatName(item.name as string, item.namespace), arguments: item.arguments } };
        calls.add(item.call_id as string);
        const last = out[out.length - 1];
        // Parallel calls (and the text before them) are one assistant turn in chat completions.
        if (last && last.role === "assistant") last.tool_calls = [...((last.tool_calls as Json[] | undefined) ?? []), call];
        else out.push({ role: "assistant", content: null, tool_calls: [call] });
        break;
      }
      case "function_call_output": {
        if (!calls.has(item.call_id as string)) {
          throw badRequest(`${at}.call_id`, `No tool call found for function call output with call_id ${String(item.call_id)}.`, "invalid_value");
        }
        out.push({ role: "tool", tool_call_id: item.call_id, content: outputText(item.output, at) });
        break;
      }
      default:
        // Reasoning items echo the model's own thoughts; chat upstreams take no such input.
        break;
    }
  }
  return out;
}

function responseFormat(text: ResponsesRequest["text"]): Json | undefined {
  const f = text?.format as Json | undefined;
  if (!f || f.type === "text") return undefined;
  if (f.type === "json_object") return { type: "json_object" };
  if (f.type === "json_schema") {
    if (!str(f.name) || f.name === "") throw missingField("text.format.name");
    if (!f.schema || typeof f.schema !== "object") throw missingField("text.format.schema");
    const schema: Json = { name: f.name, schema: f.schema };
    if (typeof f.strict === "boolean") schema.strict = f.strict;
    if (str(f.description)) schema.description = f.description;
    return { type: "json_schema", json_schema: schema };
  }
  throw invalidField("text.format.type", 'must be one of "text", "json_object", "json_schema"');
}

/** The chat request for this turn; `history` is the stored conversation before it. */
export function toChatRequest(req: ResponsesRequest, history: Json[], input: Json[], tools: ResponsesTools = responsesTools(req.tools as Json[] | null | undefined)): ChatRequest {
  const messages: Json[] = [];
  if (req.instructions) messages.push({ role: "system", content: req.instructions });
  messages.push(
    ...itemsToChatMessages([
      ...history.map((item) => ({ item, at: "previous_response_id" })),
      ...input.map((item, j) => ({ item, at: `input[${j}]` })),
    ], tools),
  );
  if (messages.length === 0) throw badRequest("input", "The conversation is empty: input holds no messages.");
  const out: ChatRequest = { model: req.model, messages: messages as ChatRequest["messages"] };
  if (req.max_output_tokens != null) out.max_tokens = req.max_output_tokens;
  const choice = chatToolChoice(req.tool_choice, tools);
  const chatTools = choice.allowed ? tools.chat?.filter((t) => choice.allowed!.has((t.function as Json).name as string)) : tools.chat;
  if (chatTools?.length) out.tools = chatTools;
  if (choice.tool_choice !== undefined) {
    // Every tool the choice could name was a hosted one: nothing is left to choose from.
    if (!out.tools && choice.tool_choice === "required") {
      throw badRequest("tool_choice", `tool_choice "required" needs at least one function tool in tools${tools.ignored.length ? " (hosted tools are not run here)" : ""}.`);
    }
    const forced = (choice.tool_choice as { function?: { name?: string } }).function?.name;
    if (forced !== undefined && !(out.tools as Json[] | undefined)?.some((t) => (t.function as Json).name === forced)) {
      throw invalidField("tool_choice.name", `names no function tool of this request ("${forced}")`);
    }
    if (out.tools || choice.tool_choice === "none") out.tool_choice = choice.tool_choice;
  }
  if (req.parallel_tool_calls != null && out.tools) out.parallel_tool_calls = req.parallel_tool_calls;
  const format = responseFormat(req.text);
  if (format) out.response_format = format;
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  const effort = (req.reasoning as Json | null | undefined)?.effort;
  if (str(effort)) out.reasoning_effort = effort;
  if (req.user) out.user = req.user;
  return out;
}
