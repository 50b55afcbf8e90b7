import { describe, expect, test } from "bun:test";
import { accumulateResponse } from "openai/lib/responses/ResponseAccumulator";
import type { ChatResult } from "../../chat/call";
import { parseResponsesRequest } from "./request";
import { ResponsesStreamTranslator, responsesFrames, type ResponsesEvent } from "./stream";
import { SseParser } from "../sse";
import { responsesTools } from "./tools";

/** What a client receives: money is written as plain decimals (JSON.rawJSON), so compare the serialised form. */
const wire = (v: unknown): any => JSON.parse(JSON.stringify(v));

const result: ChatResult = { inputTokens: 12, outputTokens: 5, charged: 2_000, serviceTier: "default" };
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });

function translator(body: Record<string, unknown> = {}) {
  const counts: Record<string, number> = {};
  const request = parseResponsesRequest({ model: "glm-4.6", input: "x", ...body });
  const shell = { id: "resp_1", createdAt: 1, model: "glm-4.6", serviceTier: "default" as const, request, toolNames: responsesTools(request.tools as never).byChatName };
  return new ResponsesStreamTranslator(shell, (p) => `${p}_${(counts[p] = (counts[p] ?? 0) + 1)}`);
}

function run(chunks: Record<string, unknown>[], body: Record<string, unknown> = {}) {
  const t = translator(body);
  const events = [...t.start(), ...chunks.flatMap((c) => t.push(c))];
  const end = t.finish(result);
  return { events: [...events, ...end.events], response: end.response };
}

const short = (e: ResponsesEvent) => e.event.replace(/^response\./, "");
const call = (index: number, args: string, name?: string) =>
  chunk({ tool_calls: [name ? { index, id: `call_${name}`, type: "function", function: { name, arguments: args } } : { index, function: { arguments: args } }] });

/** Items never interleave: each item's events run from its added to its done, and done carries the final item. */
function expectItemsInOrder(events: ResponsesEvent[], output: unknown[]) {
  let open: number | null = null;
  let next = 0;
  for (const { event, data } of events) {
    if (!("output_index" in data)) continue;
    if (event === "response.output_item.added") {
      expect(open).toBeNull();
      expect(data.output_index).toBe(next++);
      open = data.output_index as number;
      continue;
    }
    expect(data.output_index).toBe(open!);
    if (event === "response.function_call_arguments.done") expect(data.arguments).toBe((output[open!] as { arguments: string }).arguments);
    if (event === "response.output_item.done") {
      expect(data.item).toEqual(output[open!]);
      open = null;
    }
  }
  expect(open).toBeNull();
  expect(next).toBe(output.length);
}

const table: { name: string; chunks: Record<string, unknown>[]; body?: Record<string, unknown>; names: string[]; types: string[] }[] = [
  {
    name: "reasoning with a summary asked for streams as the summary",
    chunks: [chunk({ reasoning_content: "Hm" }), chunk({ reasoning_content: "m" }), chunk({ content: "Yes" }), chunk({}, "stop")],
    body: { reasoning: { summary: "auto" } },
    names: [
      "created", "in_progress",
      "output_item.added", "reasoning_summary_part.added", "reasoning_summary_text.delta", "reasoning_summary_text.delta", "reasoning_summary_text.done", "reasoning_summary_part.done", "output_item.done",
      "output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "completed",
    ],
    types: ["reasoning", "message"],
  },
  {
    // Engines emit content between argument pieces; the call must not close with half its arguments.
    name: "text arriving mid-arguments waits until the arguments are complete",
    chunks: [call(0, "", "a"), call(0, '{"q":'), chunk({ content: "\n" }), call(0, '"x"}'), chunk({}, "tool_calls")],
    names: [
      "created", "in_progress",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
      "output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "completed",
    ],
    types: ["function_call", "message"],
  },
  {
    name: "text",
    chunks: [chunk({ role: "assistant", content: "" }), chunk({ content: "Hi" }), chunk({ content: "!" }), chunk({}, "stop")],
    names: ["created", "in_progress", "output_item.added", "content_part.added", "output_text.delta", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "completed"],
    types: ["message"],
  },
  {
    name: "reasoning then text",
    chunks: [chunk({ reasoning_content: "Hmm" }), chunk({ content: "Yes" }), chunk({}, "stop")],
    names: [
      "created", "in_progress",
      "output_item.added", "content_part.added", "reasoning_text.delta", "reasoning_text.done", "content_part.done", "output_item.done",
      "output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "completed",
    ],
    types: ["reasoning", "message"],
  },
  {
    name: "two function calls",
    chunks: [
      chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "a", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
      chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "b", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
    ],
    names: [
      "created", "in_progress",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done", "completed",
    ],
    types: ["function_call", "function_call"],
  },
  {
    // Parallel calls with interleaved arguments: call 1 waits until call 0's arguments are complete.
    name: "two function calls, arguments interleaved",
    chunks: [call(0, "", "a"), call(1, "", "b"), call(0, '{"x":'), call(1, '{"y":'), call(0, "1}"), call(1, "2}"), chunk({}, "tool_calls")],
    names: [
      "created", "in_progress",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done", "completed",
    ],
    types: ["function_call", "function_call"],
  },
  {
    name: "three interleaved calls: a waiting call that is already complete hands straight on",
    chunks: [call(0, "", "a"), call(1, '{"b":1}', "b"), call(2, '{"c":', "c"), call(0, "{}"), call(2, "3}"), chunk({}, "tool_calls")],
    names: [
      "created", "in_progress",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done", "completed",
    ],
    types: ["function_call", "function_call", "function_call"],
  },
  {
    name: "a call whose arguments never complete keeps the next one waiting until the turn ends",
    chunks: [call(0, "", "a"), call(1, '{"y":2}', "b"), chunk({}, "tool_calls")],
    names: [
      "created", "in_progress",
      "output_item.added", "function_call_arguments.done", "output_item.done",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done", "completed",
    ],
    types: ["function_call", "function_call"],
  },
  {
    name: "text arriving while a call waits starts and closes the waiting call first",
    chunks: [call(0, "", "a"), call(1, "{}", "b"), chunk({ content: "Done" }), chunk({}, "stop")],
    names: [
      "created", "in_progress",
      "output_item.added", "function_call_arguments.done", "output_item.done",
      "output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
      "output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "completed",
    ],
    types: ["function_call", "function_call", "message"],
  },
  {
    name: "truncated by max_output_tokens",
    chunks: [chunk({ content: "Once" }), chunk({}, "length")],
    names: ["created", "in_progress", "output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "incomplete"],
    types: ["message"],
  },
];

describe("chat chunks → Responses stream events", () => {
  for (const c of table) {
    test(c.name, () => {
      const { events, response } = run(c.chunks, c.body);
      expect(events.map(short)).toEqual(c.names);
      events.forEach((e, i) => {
        expect(e.data.type).toBe(e.event);
        expect(e.data.sequence_number).toBe(i);
      });
      expect((response.output as { type: string }[]).map((o) => o.type)).toEqual(c.types);
      expectItemsInOrder(events, response.output as unknown[]);
      // The openai SDK's own accumulator, which validates ids, indexes and order, rebuilds the same output.
      let snapshot: any;
      for (const e of events) snapshot = accumulateResponse(wire(e.data) as never, snapshot);
      expect(snapshot.output).toEqual(response.output);
    });
  }
});

test("function call items carry our ids and the assembled arguments", () => {
  const { response } = run(table.find((c) => c.name === "two function calls")!.chunks);
  expect(response.output).toEqual([
    { id: "fc_1", type: "function_call", status: "completed", arguments: '{"x":1}', call_id: "call_1", name: "a" },
    { id: "fc_2", type: "function_call", status: "completed", arguments: "{}", call_id: "call_2", name: "b" },
  ]);
  expect(wire(response.usage)).toMatchObject({ input_tokens: 12, output_tokens: 5, total_tokens: 17, cost: 0.000002 });
});

test("interleaved parallel calls: each item's done carries its complete arguments", () => {
  const { events, response } = run(table.find((c) => c.name === "two function calls, arguments interleaved")!.chunks);
  const done = events.filter((e) => e.event === "response.output_item.done").map((e) => e.data.item);
  expect(done).toEqual([
    { id: "fc_1", type: "function_call", status: "completed", arguments: '{"x":1}', call_id: "call_1", name: "a" },
    { id: "fc_2", type: "function_call", status: "completed", arguments: '{"y":2}', call_id: "call_2", name: "b" },
  ]);
  expect(response.output).toEqual(done);
});

test("a failure ends with response.failed carrying the output so far", () => {
  const t = translator();
  const events = [...t.start(), ...t.push(chunk({ content: "Part" })), ...t.fail("backend failed")];
  const last = events.at(-1)!;
  expect(last.event).toBe("response.failed");
  expect(last.data.response).toMatchObject({ id: "resp_1", status: "failed", error: { code: "server_error", message: "backend failed" } });
  expect((last.data.response as { output: unknown[] }).output).toHaveLength(1);
});

test("a summary item carries the summary and the reasoning text; the response echoes the setting", () => {
  const { response } = run([chunk({ reasoning_content: "Plan." }), chunk({}, "stop")], { reasoning: { effort: "low", summary: "detailed" } });
  expect(response.output).toEqual([{ id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "Plan." }], content: [{ type: "reasoning_text", text: "Plan." }] }]);
  expect(response.reasoning).toEqual({ effort: "low", summary: "detailed" });
});

test("a call to a flattened namespace tool comes back with its namespace", () => {
  const tools = [{ type: "namespace", name: "crm", description: "CRM", tools: [{ type: "function", name: "lookup" }] }, { type: "function", name: "lookup2" }];
  const { events, response } = run([call(0, "{}", "lookup"), chunk({}, "tool_calls")], { tools });
  expect(response.output).toEqual([{ id: "fc_1", type: "function_call", status: "completed", arguments: "{}", call_id: "call_1", name: "lookup", namespace: "crm" }]);
  expect(events.find((e) => e.event === "response.output_item.added")!.data.item).toMatchObject({ name: "lookup", namespace: "crm" });
});

test("usage passes cached and reasoning tokens through", () => {
  const t = translator();
  t.start();
  t.push(chunk({ content: "x" }));
  const { response } = t.finish({ ...result, cachedTokens: 8, reasoningTokens: 2 });
  expect(response.usage).toMatchObject({ input_tokens_details: { cached_tokens: 8 }, output_tokens_details: { reasoning_tokens: 2 } });
});

test("usage passes cache writes through as input_tokens_details.cache_write_tokens", () => {
  const t = translator();
  t.start();
  t.push(chunk({ content: "x" }));
  const { response } = t.finish({ ...result, cachedTokens: 8, cacheWriteTokens: 3 });
  expect(response.usage).toMatchObject({ input_tokens_details: { cached_tokens: 8, cache_write_tokens: 3 } });
});

describe("wire frames: the terminal event ends the stream, and every data line is JSON", () => {
  const reasoning = (text: string) => chunk({ reasoning_content: text });
  // Upstream chunk sequences as recorded from chat upstreams: plain text, reasoning then text,
  // a tool call, a turn cut at the token limit, and a stream that breaks.
  const cases: [string, Record<string, unknown>[], Record<string, unknown>, string][] = [
    ["text", [chunk({ role: "assistant", content: "" }), chunk({ content: "Hel" }), chunk({ content: "lo" }, "stop")], {}, "response.completed"],
    ["reasoning, then text", [reasoning("Plan."), chunk({ content: "Done." }, "stop")], {}, "response.completed"],
    ["reasoning with a summary", [reasoning("Plan."), chunk({ content: "Done." }, "stop")], { reasoning: { effort: "low", summary: "auto" } }, "response.completed"],
    ["tool call", [call(0, '{"city":', "get_weather"), call(0, '"Oslo"}'), chunk({}, "tool_calls")], {}, "response.completed"],
    ["cut at max_output_tokens", [chunk({ content: "Hel" }, "length")], {}, "response.incomplete"],
    ["upstream breaks", [reasoning("Plan."), chunk({ content: "Hel" })], {}, "response.failed"],
  ];

  test.each(cases)("%s", (_name, chunks, body, terminal) => {
    const t = translator(body);
    let wire = responsesFrames(t.start()) + chunks.map((c) => responsesFrames(t.push(c))).join("");
    wire += terminal === "response.failed" ? responsesFrames(t.fail("upstream closed")) : responsesFrames(t.finish(result).events);
    expect(wire).not.toContain("[DONE]");
    const events = new SseParser().push(wire);
    expect(events.at(-1)!.event).toBe(terminal);
    expect(events.filter((e) => /^response\.(completed|incomplete|failed)$/.test(e.event!))).toHaveLength(1);
    for (const e of events) {
      const data = JSON.parse(e.data) as Record<string, any>;
      expect(data.type).toBe(e.event);
      // A reasoning item never carries encrypted_content: null (absent, or a string, per the schema).
      for (const item of [data.item, ...(data.response?.output ?? [])]) {
        if (item?.type === "reasoning") expect("encrypted_content" in item).toBe(false);
      }
    }
  });
});
