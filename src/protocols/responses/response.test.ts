import { describe, expect, test } from "bun:test";
import type { ChatResult } from "../../chat/call";
import { parseResponsesRequest } from "./request";
import { baseResponse, statusOf, toResponseObject, type ResponseShell } from "./response";

/** What a client receives: money is written as plain decimals (JSON.rawJSON), so compare the serialised form. */
const wire = (v: unknown): any => JSON.parse(JSON.stringify(v));

const result: ChatResult = { inputTokens: 36, outputTokens: 87, charged: 123_000, serviceTier: "default" };
const shell = (body: Record<string, unknown> = {}): ResponseShell => ({
  id: "resp_1", createdAt: 1_741_476_542, model: "glm-4.6", serviceTier: "default", request: parseResponsesRequest({ model: "glm-4.6", input: "x", ...body }),
});

function ids() {
  const counts: Record<string, number> = {};
  return (p: string) => `${p}_${(counts[p] = (counts[p] ?? 0) + 1)}`;
}

test.each([
  ["stop", "completed", null],
  ["tool_calls", "completed", null],
  ["length", "incomplete", { reason: "max_output_tokens" }],
  ["content_filter", "incomplete", { reason: "content_filter" }],
  [null, "completed", null],
])("finish %p → status %p", (finish, status, details) => {
  expect(statusOf(finish)).toEqual({ status: status as "completed", incomplete_details: details });
});

const fixtures: { name: string; message: Record<string, unknown>; finish: string; output: unknown[]; status: string }[] = [
  {
    name: "text",
    message: { role: "assistant", content: "In a peaceful grove beneath a silver moon..." },
    finish: "stop",
    output: [{ id: "msg_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "In a peaceful grove beneath a silver moon...", annotations: [], logprobs: [] }] }],
    status: "completed",
  },
  {
    name: "reasoning + tool call",
    message: { role: "assistant", content: null, reasoning_content: "Need the weather.", tool_calls: [{ id: "chatcmpl-tool-1", type: "function", function: { name: "get_weather", arguments: '{"location":"Boston, MA"}' } }] },
    finish: "tool_calls",
    output: [
      { id: "rs_1", type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "Need the weather." }] },
      { id: "fc_1", type: "function_call", status: "completed", arguments: '{"location":"Boston, MA"}', call_id: "call_1", name: "get_weather" },
    ],
    status: "completed",
  },
  {
    name: "truncated text",
    message: { role: "assistant", content: "Once upon" },
    finish: "length",
    output: [{ id: "msg_1", type: "message", status: "incomplete", role: "assistant", content: [{ type: "output_text", text: "Once upon", annotations: [], logprobs: [] }] }],
    status: "incomplete",
  },
];

describe("chat completion → Response object", () => {
  for (const f of fixtures) {
    test(f.name, () => {
      const chat = { id: "chatcmpl-upstream", choices: [{ index: 0, message: f.message, finish_reason: f.finish }] };
      const r = toResponseObject(shell(), chat, result, ids());
      expect(r.output).toEqual(f.output);
      expect(r.status).toBe(f.status);
      expect(wire(r.usage)).toEqual({ input_tokens: 36, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 87, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 123, cost: 0.000123 });
      expect(JSON.stringify(r)).not.toContain("chatcmpl");
    });
  }
});

test("the response echoes the request's settings, with OpenAI's defaults", () => {
  expect(baseResponse(shell())).toMatchObject({
    id: "resp_1", object: "response", created_at: 1_741_476_542, status: "in_progress", error: null, incomplete_details: null, instructions: null,
    max_output_tokens: null, metadata: {}, model: "glm-4.6", output: [], parallel_tool_calls: true, previous_response_id: null, store: true,
    temperature: 1, text: { format: { type: "text" }, verbosity: "medium" }, tool_choice: "auto", tools: [], top_p: 1, truncation: "disabled", service_tier: "default",
    completed_at: null, presence_penalty: 0, frequency_penalty: 0, top_logprobs: 0, max_tool_calls: null, safety_identifier: null, prompt_cache_key: null,
  });
  expect(baseResponse(shell()).usage).toBeNull();
  const tools = [{ type: "function", name: "f", parameters: {} }];
  expect(baseResponse(shell({ instructions: "i", max_output_tokens: 9, metadata: { k: "v" }, store: false, temperature: 0.1, tools, tool_choice: "none", previous_response_id: "resp_0" }))).toMatchObject({
    instructions: "i", max_output_tokens: 9, metadata: { k: "v" }, store: false, temperature: 0.1, tools, tool_choice: "none", previous_response_id: "resp_0",
  });
});
