/**
 * Responses tools → chat-completions tools. Pure.
 *
 * - `function` tools pass through.
 * - `namespace` tools (Codex groups sub-agent tools this way) are flattened into their function
 *   tools. A call keeps the inner name and comes back as a `function_call` with `namespace` set,
 *   as OpenAI returns it; only an inner name that collides with another tool is sent upstream
 *   qualified as `<namespace>__<name>`, and mapped back.
 * - Hosted tools (`web_search`, `file_search`, `code_interpreter`, `image_generation`,
 *   `computer_use_preview`, `local_shell`, `mcp`, …) need OpenAI's own runtime. They are left
 *   out of the upstream request and reported, so the route names them in
 *   `x-switchyard-ignored-tools`; a `tool_choice` that forces one is a 400 naming it.
 */
import { invalidField, missingField } from "../../errors";

type Json = Record<string, unknown>;

const str = (v: unknown): v is string => typeof v === "string";

/** How a chat tool name maps back to the client's tool. */
export interface ToolName {
  name: string;
  namespace?: string;
}

export interface ResponsesTools {
  chat: Json[] | undefined;
  /** Hosted tools left out of the upstream request (their name, or their type). */
  ignored: string[];
  /** Chat tool name → the client's name and namespace, for calls coming back. */
  byChatName: Map<string, ToolName>;
  /** The chat tool name of a client tool (name plus optional namespace). */
  chatName(name: string, namespace?: unknown): string;
}

function functionTool(t: Json, at: string, chatName: string): Json {
  if (!str(t.name) || t.name === "") throw missingField(`${at}.name`);
  const fn: Json = { name: chatName, parameters: t.parameters ?? { type: "object", properties: {} } };
  if (str(t.description)) fn.description = t.description;
  if (typeof t.strict === "boolean") fn.strict = t.strict;
  return { type: "function", function: fn };
}

/** A label for an ignored hosted tool: what a client recognises it by. */
function hostedLabel(t: Json): string {
  if (t.type === "mcp" && str(t.server_label)) return `mcp:${t.server_label}`;
  return str(t.name) && t.name !== "" ? t.name : String(t.type);
}

export function responsesTools(tools: Json[] | null | undefined): ResponsesTools {
  const ignored: string[] = [];
  const flat: { tool: Json; at: string; namespace?: string }[] = [];
  (tools ?? []).forEach((t, i) => {
    const at = `tools[${i}]`;
    if (t.type === "function") flat.push({ tool: t, at });
    else if (t.type === "namespace") {
      if (!str(t.name) || t.name === "") throw missingField(`${at}.name`);
      if (!Array.isArray(t.tools)) throw invalidField(`${at}.tools`, "must be an array of function tools");
      (t.tools as Json[]).forEach((inner, j) => {
        if (inner?.type === "function") flat.push({ tool: inner, at: `${at}.tools[${j}]`, namespace: t.name as string });
        else ignored.push(`${t.name as string}.${hostedLabel(inner ?? {})}`);
      });
    } else ignored.push(hostedLabel(t));
  });
  const counts = new Map<string, number>();
  for (const f of flat) counts.set(f.tool.name as string, (counts.get(f.tool.name as string) ?? 0) + 1);
  const byChatName = new Map<string, ToolName>();
  const byClient = new Map<string, string>();
  const key = (name: string, namespace?: unknown) => (str(namespace) ? `${namespace}\u0000${name}` : name);
  const chat = flat.map(({ tool, at, namespace }) => {
    const name = tool.name as string;
    const chatName = namespace && (counts.get(name) ?? 0) > 1 ? `${namespace}__${name}` : name;
    byChatName.set(chatName, namespace ? { name, namespace } : { name });
    byClient.set(key(name, namespace), chatName);
    return functionTool(tool, at, chatName);
  });
  return {
    chat: chat.length > 0 ? chat : undefined,
    ignored,
    byChatName,
    chatName: (name, namespace) => byClient.get(key(name, namespace)) ?? name,
  };
}

/** The chat tool_choice for a Responses tool_choice; forcing a hosted tool is a 400 naming it. */
export function chatToolChoice(choice: unknown, tools: ResponsesTools): { tool_choice?: unknown; allowed?: Set<string> } {
  if (choice === undefined || choice === null) return {};
  if (str(choice)) return { tool_choice: choice };
  const c = choice as Json;
  if (c.type === "function") {
    if (!str(c.name) || c.name === "") throw missingField("tool_choice.name");
    return { tool_choice: { type: "function", function: { name: tools.chatName(c.name, c.namespace) } } };
  }
  if (c.type === "allowed_tools") {
    const mode = c.mode === "required" ? "required" : "auto";
    if (!Array.isArray(c.tools)) throw invalidField("tool_choice.tools", "must be an array of tools");
    const allowed = new Set<string>();
    (c.tools as Json[]).forEach((t, k) => {
      if (t?.type !== "function") throw invalidField(`tool_choice.tools[${k}].type`, `"${String(t?.type)}" is a hosted tool this API cannot run; only function tools can be allowed`);
      if (!str(t.name)) throw missingField(`tool_choice.tools[${k}].name`);
      allowed.add(tools.chatName(t.name, t.namespace));
    });
    return { tool_choice: mode, allowed };
  }
  const label = c.type === "mcp" && str(c.server_label) ? `mcp:${c.server_label}` : String(c.type);
  throw invalidField("tool_choice.type", `forces the hosted tool "${label}", which this API cannot run; use "auto", "none", "required" or a function tool`);
}
