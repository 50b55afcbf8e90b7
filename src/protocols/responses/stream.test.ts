import { describe, expect, test } from "bun:test";
import { accumulateResponse } from "openai/lib/responses/ResponseAccumulator";
import type { ChatResult } from "../../chat/pipeline";
import { parseResponsesRequest } from "./request";
import { ResponsesStreamTranslator, type ResponsesEvent } from "./stream";

const result: ChatResult = { inputTokens: 12, outputTokens: 5, charged: 2_000, serviceTier: "default" };
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });

function translator() {
  const counts: Record<string, number> = {};
  const shell = { id: "resp_1", createdAt: 1, model: "glm-4.6", serviceTier: "default" as const, request: parseResponsesRequest({ model: "glm-4.6", input: "x" }) };
  return new ResponsesStreamTranslator(shell, (p) => `${p}_${(counts[p] = (counts[p] ?? 0) + 1)}`);
}

function run(chunks: Record<string, unknown>[]) {
  const t = translator();
  const events = [...t.start(), ...chunks.flatMap((c) => t.push(c))];
  const end = t.finish(result);
  return { events: [...events, ...end.events], response: end.response };
}

const short = (e: ResponsesEvent) => e.event.replace(/^response\./, "");

const table: { name: string; chunks: Record<string, unknown>[]; names: string[]; types: string[] }[] = [
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
    name: "truncated by max_output_tokens",
    chunks: [chunk({ content: "Once" }), chunk({}, "length")],
    names: ["created", "in_progress", "output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done", "incomplete"],
    types: ["message"],
  },
];

describe("chat chunks → Responses stream events", () => {
  for (const c of table) {
    test(c.name, () => {
      const { events, response } = run(c.chunks);
      expect(events.map(short)).toEqual(c.names);
      events.forEach((e, i) => {
        expect(e.data.type).toBe(e.event);
        expect(e.data.sequence_number).toBe(i);
      });
      expect((response.output as { type: string }[]).map((o) => o.type)).toEqual(c.types);
      // The openai SDK's own accumulator, which validates ids, indexes and order, rebuilds the same output.
      let snapshot: any;
      for (const e of events) snapshot = accumulateResponse(structuredClone(e.data) as never, snapshot);
      expect(snapshot.output).toEqual(response.output);
    });
  }
});

test("function call items carry our ids and the assembled arguments", () => {
  const { response } = run(table[2]!.chunks);
  expect(response.output).toEqual([
    { id: "fc_1", type: "function_call", status: "completed", arguments: '{"x":1}', call_id: "call_1", name: "a" },
    { id: "fc_2", type: "function_call", status: "completed", arguments: "{}", call_id: "call_2", name: "b" },
  ]);
  expect(response.usage).toMatchObject({ input_tokens: 12, output_tokens: 5, total_tokens: 17, cost: 0.000002 });
});

test("a failure ends with response.failed carrying the output so far", () => {
  const t = translator();
  const events = [...t.start(), ...t.push(chunk({ content: "Part" })), ...t.fail("backend failed")];
  const last = events.at(-1)!;
  expect(last.event).toBe("response.failed");
  expect(last.data.response).toMatchObject({ id: "resp_1", status: "failed", error: { code: "server_error", message: "backend failed" } });
  expect((last.data.response as { output: unknown[] }).output).toHaveLength(1);
});
