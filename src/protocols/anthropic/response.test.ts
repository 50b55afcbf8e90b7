import { describe, expect, test } from "bun:test";
import type { ChatResult } from "../../chat/call";
import { parseToolInput, stopReasonOf, toAnthropicMessage } from "./response";

/** What a client receives: money is written as plain decimals (JSON.rawJSON), so compare the serialised form. */
const wire = (v: unknown): any => JSON.parse(JSON.stringify(v));

const result: ChatResult = { inputTokens: 25, outputTokens: 12, charged: 19_800, serviceTier: "default" };

describe("finish_reason → stop_reason", () => {
  const table: [unknown, unknown, string[], string, string | null][] = [
    ["stop", null, [], "end_turn", null],
    ["stop", "END", ["END"], "stop_sequence", "END"],
    ["stop", 128009, ["END"], "end_turn", null], // an EOS token id, not one of ours
    ["stop", "other", ["END"], "end_turn", null],
    ["length", null, [], "max_tokens", null],
    ["tool_calls", null, [], "tool_use", null],
    ["function_call", null, [], "tool_use", null],
    ["content_filter", null, [], "refusal", null],
    [null, null, [], "end_turn", null],
  ];
  for (const [finish, matched, stops, reason, seq] of table) {
    test(`${String(finish)} (${String(matched)})`, () => {
      expect(stopReasonOf(finish, matched, stops)).toEqual({ stop_reason: reason as never, stop_sequence: seq });
    });
  }
});

test("tool input parsing is tolerant", () => {
  expect(parseToolInput('{"a":1}')).toEqual({ a: 1 });
  expect(parseToolInput("")).toEqual({});
  expect(parseToolInput("{not json")).toEqual({});
  expect(parseToolInput("[1,2]")).toEqual({ value: [1, 2] });
});

/** Chat completions as vLLM returns them (reasoning_content, tool calls, stop_reason). */
const fixtures: { name: string; chat: Record<string, unknown>; content: unknown[]; stop: string }[] = [
  {
    name: "text",
    chat: { id: "chatcmpl-9", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "Hi there!" }, finish_reason: "stop", stop_reason: null }] },
    content: [{ type: "text", text: "Hi there!" }],
    stop: "end_turn",
  },
  {
    name: "reasoning + text",
    chat: { choices: [{ index: 0, message: { role: "assistant", reasoning_content: "The user greets me.", content: "Hello!" }, finish_reason: "stop" }] },
    content: [{ type: "thinking", thinking: "The user greets me.", signature: "" }, { type: "text", text: "Hello!" }],
    stop: "end_turn",
  },
  {
    name: "text + two tool calls",
    chat: {
      choices: [{
        index: 0,
        message: {
          role: "assistant", content: "Let me check.",
          tool_calls: [
            { id: "chatcmpl-tool-abc", type: "function", function: { name: "get_weather", arguments: '{"location": "Paris"}' } },
            { id: "chatcmpl-tool-def", type: "function", function: { name: "get_time", arguments: "{}" } },
          ],
        },
        finish_reason: "tool_calls",
      }],
    },
    content: [
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } },
      { type: "tool_use", id: "toolu_2", name: "get_time", input: {} },
    ],
    stop: "tool_use",
  },
  {
    name: "empty content on length",
    chat: { choices: [{ index: 0, message: { role: "assistant", content: "" }, finish_reason: "length" }] },
    content: [],
    stop: "max_tokens",
  },
];

describe("chat completion → Anthropic message", () => {
  for (const f of fixtures) {
    test(f.name, () => {
      let n = 0;
      const msg = toAnthropicMessage(f.chat, { id: "msg_1", model: "glm-4.6", result, toolId: () => `toolu_${++n}` });
      expect(wire(msg)).toEqual({
        id: "msg_1", type: "message", role: "assistant", model: "glm-4.6", content: f.content, stop_reason: f.stop, stop_sequence: null,
        usage: { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 12, service_tier: "standard", cost: 0.0000198 },
      });
      expect(JSON.stringify(msg)).not.toContain("chatcmpl");
    });
  }
});

test("priority tier shows in usage", () => {
  const msg = toAnthropicMessage(fixtures[0]!.chat, { id: "msg_1", model: "m-turbo", result: { ...result, serviceTier: "priority" }, toolId: () => "toolu_x" });
  expect((msg.usage as { service_tier: string }).service_tier).toBe("priority");
});

describe("cache reads in Anthropic usage", () => {
  const cachedResult = { ...result, inputTokens: 1000, cachedTokens: 900 };
  const usageOf = (cacheAccounting: boolean | undefined) =>
    toAnthropicMessage({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] }, { id: "msg_1", model: "glm-4.6", result: cachedResult, cacheAccounting, toolId: () => "toolu_1" }).usage as Record<string, unknown>;
  test("a request with cache_control reports the upstream's cached tokens apart from input_tokens", () => {
    expect(usageOf(true)).toMatchObject({ input_tokens: 100, cache_read_input_tokens: 900 });
  });
  test("cache writes the upstream reported are cache_creation_input_tokens, apart from reads and input_tokens", () => {
    const usage = toAnthropicMessage({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] }, {
      id: "msg_1", model: "glm-4.6", result: { ...cachedResult, cachedTokens: 800, cacheWriteTokens: 150 }, cacheAccounting: true, toolId: () => "toolu_1",
    }).usage;
    expect(usage).toMatchObject({ input_tokens: 50, cache_creation_input_tokens: 150, cache_read_input_tokens: 800 });
  });
  test("a request without cache_control reports every input token as input_tokens and no cache accounting", () => {
    expect(usageOf(false)).toMatchObject({ input_tokens: 1000, cache_creation_input_tokens: null, cache_read_input_tokens: null });
  });
});

