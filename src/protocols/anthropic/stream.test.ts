import { describe, expect, test } from "bun:test";
import type { ChatResult } from "../../chat/call";
import { AnthropicStreamTranslator, type AnthropicEvent } from "./stream";

/** What a client receives: money is written as plain decimals (JSON.rawJSON), so compare the serialised form. */
const wire = (v: unknown): any => JSON.parse(JSON.stringify(v));

const result: ChatResult = { inputTokens: 30, outputTokens: 9, charged: 1_000, serviceTier: "default" };
const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish, ...extra }],
});

function run(chunks: Record<string, unknown>[], stops: string[] = []): AnthropicEvent[] {
  let n = 0;
  const t = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 28, stopSequences: stops, toolId: () => `toolu_${++n}` });
  return [...t.start(), ...chunks.flatMap((c) => t.push(c)), ...t.finish(result)];
}

/** Compact view: event name plus the interesting part of its payload. */
function brief(events: AnthropicEvent[]): string[] {
  return events.map(({ event, data }) => {
    if (event === "content_block_start") return `start#${data.index}:${(data.content_block as { type: string }).type}`;
    if (event === "content_block_delta") {
      const d = data.delta as Record<string, string>;
      return `delta#${data.index}:${d.type}:${d.text ?? d.thinking ?? d.partial_json}`;
    }
    if (event === "content_block_stop") return `stop#${data.index}`;
    if (event === "message_delta") return `message_delta:${(data.delta as { stop_reason: string }).stop_reason}`;
    return event;
  });
}

const call = (index: number, args: string, name?: string) =>
  chunk({ tool_calls: [name ? { index, id: `call_${name}`, type: "function", function: { name, arguments: args } } : { index, function: { arguments: args } }] });

/** Blocks never interleave: starts count up from 0, deltas and the stop go only to the open block. */
function expectBlocksInOrder(events: AnthropicEvent[]) {
  let open: number | null = null;
  let next = 0;
  for (const { event, data } of events) {
    if (event === "content_block_start") {
      expect(open).toBeNull();
      expect(data.index).toBe(next++);
      open = data.index as number;
    } else if (event === "content_block_delta") expect(data.index).toBe(open!);
    else if (event === "content_block_stop") {
      expect(data.index).toBe(open!);
      open = null;
    }
  }
  expect(open).toBeNull();
}

const table: { name: string; chunks: Record<string, unknown>[]; stops?: string[]; expect: string[] }[] = [
  {
    name: "text only (the role chunk with empty content opens nothing)",
    chunks: [chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ content: "lo" }), chunk({}, "stop")],
    expect: ["message_start", "ping", "start#0:text", "delta#0:text_delta:Hel", "delta#0:text_delta:lo", "stop#0", "message_delta:end_turn", "message_stop"],
  },
  {
    name: "reasoning, then text",
    chunks: [chunk({ reasoning_content: "Think" }), chunk({ reasoning_content: "ing" }), chunk({ content: "Answer" }), chunk({}, "stop")],
    expect: ["message_start", "ping", "start#0:thinking", "delta#0:thinking_delta:Think", "delta#0:thinking_delta:ing", "stop#0", "start#1:text", "delta#1:text_delta:Answer", "stop#1", "message_delta:end_turn", "message_stop"],
  },
  {
    name: "text then two tool calls, arguments in pieces",
    chunks: [
      chunk({ content: "Checking" }),
      chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
    ],
    expect: [
      "message_start", "ping", "start#0:text", "delta#0:text_delta:Checking", "stop#0",
      "start#1:tool_use", 'delta#1:input_json_delta:{"city":', 'delta#1:input_json_delta:"Paris"}', "stop#1",
      "start#2:tool_use", "delta#2:input_json_delta:{}", "stop#2", "message_delta:tool_use", "message_stop",
    ],
  },
  {
    // Parallel calls with interleaved arguments: call 1 waits until call 0's arguments are complete.
    name: "two tool calls, arguments interleaved",
    chunks: [call(0, "", "a"), call(1, "", "b"), call(0, '{"x":'), call(1, '{"y":'), call(0, "1}"), call(1, "2}"), chunk({}, "tool_calls")],
    expect: [
      "message_start", "ping",
      "start#0:tool_use", 'delta#0:input_json_delta:{"x":', "delta#0:input_json_delta:1}", "stop#0",
      "start#1:tool_use", 'delta#1:input_json_delta:{"y":', "delta#1:input_json_delta:2}", "stop#1",
      "message_delta:tool_use", "message_stop",
    ],
  },
  {
    name: "three interleaved calls: a waiting call that is already complete hands straight on",
    chunks: [call(0, "", "a"), call(1, '{"b":1}', "b"), call(2, '{"c":', "c"), call(0, "{}"), call(2, "3}"), chunk({}, "tool_calls")],
    expect: [
      "message_start", "ping",
      "start#0:tool_use", "delta#0:input_json_delta:{}", "stop#0",
      "start#1:tool_use", 'delta#1:input_json_delta:{"b":1}', "stop#1",
      "start#2:tool_use", 'delta#2:input_json_delta:{"c":', "delta#2:input_json_delta:3}", "stop#2",
      "message_delta:tool_use", "message_stop",
    ],
  },
  {
    name: "a call whose arguments never complete keeps the next one waiting until the turn ends",
    chunks: [call(0, "", "a"), call(1, '{"y":2}', "b"), chunk({}, "tool_calls")],
    expect: ["message_start", "ping", "start#0:tool_use", "stop#0", "start#1:tool_use", 'delta#1:input_json_delta:{"y":2}', "stop#1", "message_delta:tool_use", "message_stop"],
  },
  {
    name: "text arriving while a call waits starts and stops the waiting call first",
    chunks: [call(0, "", "a"), call(1, "{}", "b"), chunk({ content: "Done" }), chunk({}, "stop")],
    expect: [
      "message_start", "ping", "start#0:tool_use", "stop#0", "start#1:tool_use", "delta#1:input_json_delta:{}", "stop#1",
      "start#2:text", "delta#2:text_delta:Done", "stop#2", "message_delta:end_turn", "message_stop",
    ],
  },
  {
    name: "length",
    chunks: [chunk({ content: "Cut" }), chunk({}, "length")],
    expect: ["message_start", "ping", "start#0:text", "delta#0:text_delta:Cut", "stop#0", "message_delta:max_tokens", "message_stop"],
  },
  {
    name: "a matched stop sequence (vLLM's stop_reason)",
    chunks: [chunk({ content: "1, 2, 3" }), chunk({}, "stop", { stop_reason: "4" })],
    stops: ["4"],
    expect: ["message_start", "ping", "start#0:text", "delta#0:text_delta:1, 2, 3", "stop#0", "message_delta:stop_sequence", "message_stop"],
  },
  {
    // Engines emit content between argument pieces; the tool_use block must not stop early.
    name: "text arriving mid-arguments waits until the arguments are complete",
    chunks: [call(0, "", "a"), call(0, '{"q":'), chunk({ content: "\n" }), call(0, '"x"}'), chunk({ content: "done" }), chunk({}, "tool_calls")],
    expect: [
      "message_start", "ping", "start#0:tool_use", 'delta#0:input_json_delta:{"q":', 'delta#0:input_json_delta:"x"}', "stop#0",
      "start#1:text", "delta#1:text_delta:\n", "delta#1:text_delta:done", "stop#1", "message_delta:tool_use", "message_stop",
    ],
  },
  {
    name: "thinking arriving mid-arguments waits too; unfinished arguments still end the turn cleanly",
    chunks: [call(0, '{"q":', "a"), chunk({ reasoning_content: "hmm" }), chunk({}, "tool_calls")],
    expect: ["message_start", "ping", "start#0:tool_use", 'delta#0:input_json_delta:{"q":', "stop#0", "start#1:thinking", "delta#1:thinking_delta:hmm", "stop#1", "message_delta:tool_use", "message_stop"],
  },
  {
    name: "a stop sequence found in the text (the upstream ignored it) ends the turn there",
    chunks: [chunk({ content: "Answer: 4" }), chunk({ content: "##" }), chunk({ content: "# and more" }), call(0, "{}", "a"), chunk({}, "stop")],
    stops: ["###"],
    expect: ["message_start", "ping", "start#0:text", "delta#0:text_delta:Answer: 4", "stop#0", "message_delta:stop_sequence", "message_stop"],
  },
  {
    name: "a held-back prefix that never completes a stop sequence is sent at the end",
    chunks: [chunk({ content: "ends with #" }), chunk({}, "stop")],
    stops: ["###"],
    expect: ["message_start", "ping", "start#0:text", "delta#0:text_delta:ends with ", "delta#0:text_delta:#", "stop#0", "message_delta:end_turn", "message_stop"],
  },
  {
    name: "a matched stop sequence (SGLang's matched_stop)",
    chunks: [chunk({ content: "1, 2, 3" }), chunk({}, "stop", { matched_stop: "4" })],
    stops: ["4"],
    expect: ["message_start", "ping", "start#0:text", "delta#0:text_delta:1, 2, 3", "stop#0", "message_delta:stop_sequence", "message_stop"],
  },
  {
    name: "no content at all",
    chunks: [chunk({ role: "assistant", content: "" }), chunk({}, "stop")],
    expect: ["message_start", "ping", "message_delta:end_turn", "message_stop"],
  },
];

describe("chat chunks → Anthropic stream events", () => {
  for (const c of table) {
    test(c.name, () => {
      const events = run(c.chunks, c.stops);
      expect(brief(events)).toEqual(c.expect);
      for (const e of events) expect(e.data.type).toBe(e.event);
      expectBlocksInOrder(events);
    });
  }
});

test("message_start announces the estimate; message_delta carries final usage, cost and stop sequence", () => {
  const events = run([chunk({ content: "x" }), chunk({}, "stop", { stop_reason: "END" })], ["END"]);
  expect(events[0]!.data.message).toMatchObject({ id: "msg_1", type: "message", role: "assistant", model: "glm-4.6", content: [], stop_reason: null, usage: { input_tokens: 28 } });
  const delta = events.find((e) => e.event === "message_delta")!.data;
  expect(wire(delta)).toEqual({
    type: "message_delta",
    delta: { stop_reason: "stop_sequence", stop_sequence: "END" },
    usage: { input_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 9, service_tier: "standard", cost: 0.000001 },
  });
});

test("a locally found stop sequence is named in message_delta", () => {
  const events = run([chunk({ content: "x<END>y" }), chunk({}, "stop")], ["<END>"]);
  expect(events.find((e) => e.event === "message_delta")!.data.delta).toEqual({ stop_reason: "stop_sequence", stop_sequence: "<END>" });
});

test("cached prompt tokens are reported as cache reads, apart from input_tokens", () => {
  const t = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 28, toolId: () => "toolu_1" });
  const events = [...t.start(), ...t.push(chunk({ content: "x" })), ...t.finish({ ...result, cachedTokens: 24, reasoningTokens: 3 })];
  expect(events.find((e) => e.event === "message_delta")!.data.usage).toMatchObject({ input_tokens: 6, cache_read_input_tokens: 24, output_tokens: 9 });
});

test("cache writes are cache_creation_input_tokens, reads cache_read_input_tokens, each apart from input_tokens", () => {
  const t = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 28, toolId: () => "toolu_1" });
  const events = [...t.start(), ...t.push(chunk({ content: "x" })), ...t.finish({ ...result, cachedTokens: 20, cacheWriteTokens: 6 })];
  expect(events.find((e) => e.event === "message_delta")!.data.usage).toMatchObject({ input_tokens: 4, cache_creation_input_tokens: 6, cache_read_input_tokens: 20, output_tokens: 9 });
});

test("message_start announces the whole prompt and claims no cache read or write it cannot know yet", () => {
  const withCache = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 28, toolId: () => "toolu_1" });
  expect(withCache.start()[0]!.data.message).toMatchObject({ usage: { input_tokens: 28, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } });
  const without = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 28, cacheAccounting: false, toolId: () => "toolu_1" });
  expect(without.start()[0]!.data.message).toMatchObject({ usage: { input_tokens: 28, cache_creation_input_tokens: null, cache_read_input_tokens: null } });
});

test("thinking display omitted: no thinking blocks", () => {
  const t = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 28, omitThinking: true, toolId: () => "toolu_1" });
  const events = [...t.start(), ...t.push(chunk({ reasoning_content: "secret" })), ...t.push(chunk({ content: "Hi" })), ...t.finish(result)];
  expect(brief(events)).toEqual(["message_start", "ping", "start#0:text", "delta#0:text_delta:Hi", "stop#0", "message_delta:end_turn", "message_stop"]);
});

test("tool_use block start carries our id, the name and an empty input", () => {
  const events = run([chunk({ tool_calls: [{ index: 0, id: "call_upstream", type: "function", function: { name: "f", arguments: "" } }] }), chunk({}, "tool_calls")]);
  expect(events[2]!.data).toEqual({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "f", input: {} } });
});

test("interleaved calls keep their names and ids in block order", () => {
  const events = run(table[3]!.chunks);
  const starts = events.filter((e) => e.event === "content_block_start").map((e) => e.data.content_block);
  expect(starts).toEqual([
    { type: "tool_use", id: "toolu_1", name: "a", input: {} },
    { type: "tool_use", id: "toolu_2", name: "b", input: {} },
  ]);
});

test("the error event has Anthropic's shape", () => {
  expect(AnthropicStreamTranslator.error("boom")).toEqual({ event: "error", data: { type: "error", error: { type: "api_error", message: "boom" } } });
});
