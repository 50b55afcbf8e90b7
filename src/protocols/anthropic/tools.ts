/**
 * Anthropic tool definitions → chat-completions tools. Pure.
 *
 * - Client tools (no `type`, or `type: "custom"`) become function tools.
 * - Server tools (`web_search_…`, `code_execution_…`, `bash_…`, `text_editor_…`, `computer_…`,
 *   `tool_search_tool_…`, …) need Anthropic's own runtime or schemas; they are left out of the
 *   upstream request and reported, so the route can name them in `x-switchyard-ignored-tools`.
 *   A `tool_choice` that forces one of them is a 400: the model could not honour it.
 * - `defer_loading: true` tools are loaded only once the conversation references them with a
 *   `tool_reference` block (tool search), as Anthropic's API does; until then the upstream never
 *   sees them, which keeps the prompt (and the bill) as small as the client intended.
 */
import { invalidField, missingField } from "../../errors";

type Json = Record<string, unknown>;

const str = (v: unknown): v is string => typeof v === "string";

export interface ChatTools {
  tools: Json[] | undefined;
  /** Names (or types) of server tools left out of the upstream request. */
  ignored: string[];
}

export const isClientTool = (t: Json): boolean => t.type === undefined || t.type === null || t.type === "custom";

/** Tool names a conversation's `tool_reference` blocks load (they sit inside tool_result content). */
export function referencedTools(messages: readonly { content: unknown }[]): Set<string> {
  const names = new Set<string>();
  const visit = (blocks: unknown) => {
    if (!Array.isArray(blocks)) return;
    for (const b of blocks as Json[]) {
      if (b?.type === "tool_reference" && str(b.tool_name)) names.add(b.tool_name);
      else if (b?.type === "tool_result") visit(b.content);
    }
  };
  for (const m of messages) visit(m.content);
  return names;
}

export function chatTools(tools: Json[] | undefined, referenced: ReadonlySet<string>, forced: string | null): ChatTools {
  if (!tools) return { tools: undefined, ignored: [] };
  const out: Json[] = [];
  const ignored: string[] = [];
  tools.forEach((t, i) => {
    if (!isClientTool(t)) {
      const label = str(t.name) && t.name !== "" ? t.name : String(t.type);
      if (forced !== null && forced === t.name) {
        throw invalidField("tool_choice.name", `"${forced}" is a server tool (${String(t.type)}) that this API cannot run; force a client tool instead`);
      }
      ignored.push(label);
      return;
    }
    if (!str(t.name) || t.name === "") throw missingField(`tools[${i}].name`);
    if (t.defer_loading === true && !referenced.has(t.name) && forced !== t.name) return;
    const schema = t.input_schema;
    if (!schema || typeof schema !== "object" || Array.isArray(schema)) throw missingField(`tools[${i}].input_schema`);
    const fn: Json = { name: t.name, parameters: schema };
    if (str(t.description)) fn.description = t.description;
    out.push({ type: "function", function: fn });
  });
  return { tools: out.length > 0 ? out : undefined, ignored };
}
