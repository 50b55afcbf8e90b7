/**
 * Table-driven translator tests over request bodies recorded from real clients
 * (test/fixtures/clients: Claude Code, Codex CLI, the Vercel AI SDK; the end-to-end client tests
 * record them). Each body must translate, and what makes each client special must come out right.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chatToolsOf, omitsThinking, parseMessagesRequest, toChatRequest as messagesToChat } from "./anthropic/request";
import { normalizeInput, parseResponsesRequest, toChatRequest as responsesToChat } from "./responses/request";
import { responsesTools } from "./responses/tools";

type Json = Record<string, any>;

const load = (client: string): Json[] => JSON.parse(readFileSync(join(import.meta.dir, "../../test/fixtures/clients", `${client}.json`), "utf8")).requests;
const ids = (p: string) => `${p}_fixture`;

describe("Claude Code (Messages) bodies", () => {
  const bodies = load("claude-code");
  test.each(bodies.map((b, i) => [i, b] as const))("request %d translates", (_i, body) => {
    const req = parseMessagesRequest(body);
    const chat = messagesToChat(req);
    const roles = (chat.messages as Json[]).map((m) => m.role);
    // The mid-conversation system entry stays where Claude Code put it (after the first user turn).
    const systemAt = body.messages.findIndex((m: Json) => m.role === "system");
    expect(systemAt).toBeGreaterThan(0);
    expect(roles.indexOf("user")).toBeLessThan(roles.lastIndexOf("system"));
    // adaptive thinking + output_config.effort → reasoning effort; display omitted is honoured.
    expect(chat.reasoning_effort).toBe(body.output_config.effort === "max" || body.output_config.effort === "xhigh" ? "high" : body.output_config.effort);
    expect(omitsThinking(req)).toBe(body.thinking?.display === "omitted");
    // Deferred tools stay back until a tool_reference loads them; every other tool goes upstream.
    const deferred = body.tools.filter((t: Json) => t.defer_loading).map((t: Json) => t.name);
    const sent = ((chat.tools ?? []) as Json[]).map((t) => t.function.name);
    expect(deferred.length).toBeGreaterThan(0);
    for (const name of deferred) expect(sent).not.toContain(name);
    expect(sent.length).toBe(body.tools.length - deferred.length);
    expect(chatToolsOf(req).ignored).toEqual([]);
    // cache_control and other block extras never reach the upstream.
    expect(JSON.stringify(chat)).not.toContain("cache_control");
  });

  test("a tool round trip: tool_result follows the assistant's call", () => {
    const last = bodies.at(-1)!;
    const chat = messagesToChat(parseMessagesRequest(last));
    const msgs = chat.messages as Json[];
    const call = msgs.findIndex((m) => m.role === "assistant" && m.tool_calls);
    expect(call).toBeGreaterThan(0);
    expect(msgs[call + 1]!.role).toBe("tool");
    expect(msgs[call + 1]!.tool_call_id).toBe(msgs[call]!.tool_calls[0].id);
  });
});

describe("Codex CLI (Responses) bodies", () => {
  const bodies = load("codex");
  test.each(bodies.map((b, i) => [i, b] as const))("request %d translates", (_i, body) => {
    const req = parseResponsesRequest(body);
    const tools = responsesTools(req.tools as Json[]);
    const chat = responsesToChat(req, [], normalizeInput(req.input, ids), tools);
    const names = ((chat.tools ?? []) as Json[]).map((t) => t.function.name);
    // The namespace's function tools are flattened under their own names; hosted tools are named, not sent.
    const namespace = body.tools.find((t: Json) => t.type === "namespace");
    for (const inner of namespace.tools) {
      expect(names).toContain(inner.name);
      expect(tools.byChatName.get(inner.name)).toEqual({ name: inner.name, namespace: namespace.name });
    }
    expect(tools.ignored).toContain("web_search");
    expect(names).not.toContain("web_search");
    // Developer messages become system messages; the reasoning knob is not invented.
    expect((chat.messages as Json[])[0]!.role).toBe("system");
    expect(chat.stream).toBeUndefined();
  });

  test("the second turn carries the exec_command call and its output as a chat tool exchange", () => {
    const body = bodies.at(-1)!;
    const req = parseResponsesRequest(body);
    const msgs = responsesToChat(req, [], normalizeInput(req.input, ids)).messages as Json[];
    const call = msgs.findIndex((m) => m.role === "assistant" && m.tool_calls);
    expect(msgs[call]!.tool_calls[0].function.name).toBe("exec_command");
    expect(msgs[call + 1]).toMatchObject({ role: "tool", tool_call_id: msgs[call]!.tool_calls[0].id });
    expect(msgs[call + 1]!.content).toContain("round-trip-ok");
  });
});

describe("Vercel AI SDK (Responses) bodies", () => {
  const bodies = load("ai-sdk");
  test("item_reference inputs resolve through the lookup; an unknown one is a 400 naming it", () => {
    const body = bodies.at(-1)!;
    const req = parseResponsesRequest(body);
    const refs = (body.input as Json[]).filter((i) => i.type === "item_reference");
    expect(refs.length).toBeGreaterThan(0);
    const stored = new Map<string, Json>(refs.map((r) => [r.id, r.id.startsWith("rs_")
      ? { id: r.id, type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "thought" }] }
      : { id: r.id, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Let me check." }] }]));
    const input = normalizeInput(req.input, ids, (id) => stored.get(id) ?? null);
    expect(input.some((i) => i.type === "item_reference")).toBe(false);
    const msgs = responsesToChat(req, [], input).messages as Json[];
    expect(msgs.find((m) => m.role === "assistant")).toMatchObject({ content: "Let me check.", tool_calls: [{ function: { name: "weather" } }] });
    expect(() => normalizeInput(req.input, ids, () => null)).toThrow(refs[0]!.id);
  });
});
