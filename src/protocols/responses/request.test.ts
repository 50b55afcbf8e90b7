import { describe, expect, test } from "bun:test";
import { DomainError } from "../../errors";
import { normalizeInput, parseResponsesRequest, toChatRequest } from "./request";

let n = 0;
const ids = (prefix: string) => `${prefix}_${++n}`;

function translate(body: Record<string, unknown>, history: Record<string, unknown>[] = []) {
  const req = parseResponsesRequest({ model: "glm-4.6", ...body });
  return toChatRequest(req, history, normalizeInput(req.input, ids));
}

/** Request shapes as the OpenAI Responses API documents them and agent CLIs send them. */
const cases: { name: string; body: Record<string, unknown>; history?: Record<string, unknown>[]; expect: Record<string, unknown> }[] = [
  {
    name: "string input with instructions",
    body: { input: "Tell me a three sentence bedtime story about a unicorn.", instructions: "Talk like a pirate." },
    expect: { messages: [{ role: "system", content: "Talk like a pirate." }, { role: "user", content: "Tell me a three sentence bedtime story about a unicorn." }] },
  },
  {
    name: "easy input messages (string content), developer role → system",
    body: { input: [{ role: "developer", content: "Be concise." }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello!" }, { role: "user", content: "Bye" }] },
    expect: { messages: [{ role: "system", content: "Be concise." }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello!" }, { role: "user", content: "Bye" }] },
  },
  {
    name: "typed message items with input_text and input_image",
    body: {
      input: [{
        type: "message", role: "user",
        content: [{ type: "input_text", text: "what is in this image?" }, { type: "input_image", image_url: "https://example.com/cat.jpg", detail: "low" }],
      }],
    },
    expect: { messages: [{ role: "user", content: [{ type: "text", text: "what is in this image?" }, { type: "image_url", image_url: { url: "https://example.com/cat.jpg", detail: "low" } }] }] },
  },
  {
    name: "assistant output message + function_call + function_call_output (a Codex-style replay)",
    body: {
      input: [
        { role: "user", content: "What's the weather like in Paris today?" },
        { type: "reasoning", id: "rs_1", summary: [] },
        { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Let me check.", annotations: [] }] },
        { type: "function_call", id: "fc_1", call_id: "call_12345xyz", name: "get_weather", arguments: '{"location":"Paris, France"}' },
        { type: "function_call", id: "fc_2", call_id: "call_67890abc", name: "get_time", arguments: "{}" },
        { type: "function_call_output", call_id: "call_12345xyz", output: "15°C" },
        { type: "function_call_output", call_id: "call_67890abc", output: [{ type: "input_text", text: "09:00" }] },
      ],
    },
    expect: {
      messages: [
        { role: "user", content: "What's the weather like in Paris today?" },
        {
          role: "assistant", content: "Let me check.",
          tool_calls: [
            { id: "call_12345xyz", type: "function", function: { name: "get_weather", arguments: '{"location":"Paris, France"}' } },
            { id: "call_67890abc", type: "function", function: { name: "get_time", arguments: "{}" } },
          ],
        },
        { role: "tool", tool_call_id: "call_12345xyz", content: "15°C" },
        { role: "tool", tool_call_id: "call_67890abc", content: "09:00" },
      ],
    },
  },
  {
    name: "a stored conversation comes before the new input",
    history: [
      { id: "msg_a", type: "message", role: "user", content: [{ type: "input_text", text: "My name is Ada." }] },
      { id: "msg_b", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Hi Ada!", annotations: [] }] },
    ],
    body: { input: "What is my name?", previous_response_id: "resp_1", instructions: "Only this turn." },
    expect: {
      messages: [
        { role: "system", content: "Only this turn." },
        { role: "user", content: "My name is Ada." },
        { role: "assistant", content: "Hi Ada!" },
        { role: "user", content: "What is my name?" },
      ],
    },
  },
  {
    name: "flat function tools, tool_choice, json_schema format, sampling, reasoning effort",
    body: {
      input: "x",
      tools: [{ type: "function", name: "get_weather", description: "Get current temperature", parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"], additionalProperties: false }, strict: true }],
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: false,
      text: { format: { type: "json_schema", name: "weather", schema: { type: "object", properties: { t: { type: "number" } } }, strict: true } },
      temperature: 0.2, top_p: 0.8, max_output_tokens: 512, reasoning: { effort: "high" }, user: "u1",
      store: false, metadata: { a: "b" }, service_tier: "priority",
    },
    expect: {
      max_tokens: 512, temperature: 0.2, top_p: 0.8, reasoning_effort: "high", user: "u1", parallel_tool_calls: false,
      tools: [{ type: "function", function: { name: "get_weather", description: "Get current temperature", parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"], additionalProperties: false }, strict: true } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      response_format: { type: "json_schema", json_schema: { name: "weather", schema: { type: "object", properties: { t: { type: "number" } } }, strict: true } },
    },
  },
  {
    name: "namespace tools flattened, hosted tools left out, a colliding inner name qualified",
    body: {
      input: "x",
      tools: [
        { type: "function", name: "close_agent", parameters: { type: "object" } },
        { type: "namespace", name: "multi_agent_v1", description: "Sub-agents", tools: [{ type: "function", name: "spawn_agent", parameters: { type: "object" } }, { type: "function", name: "close_agent" }] },
        { type: "web_search", external_web_access: false },
        { type: "mcp", server_label: "docs", server_url: "https://example.com/mcp" },
      ],
    },
    expect: {
      tools: [
        { type: "function", function: { name: "close_agent", parameters: { type: "object" } } },
        { type: "function", function: { name: "spawn_agent", parameters: { type: "object" } } },
        { type: "function", function: { name: "multi_agent_v1__close_agent", parameters: { type: "object", properties: {} } } },
      ],
    },
  },
  {
    name: "a namespaced call in the history goes upstream under its chat name",
    body: {
      tools: [{ type: "namespace", name: "ns", description: "", tools: [{ type: "function", name: "f" }] }, { type: "function", name: "f" }],
      input: [{ role: "user", content: "x" }, { type: "function_call", call_id: "c1", name: "f", namespace: "ns", arguments: "{}" }, { type: "function_call_output", call_id: "c1", output: "ok" }],
    },
    expect: { messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "ns__f", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: "ok" }] },
  },
  {
    name: "allowed_tools narrows the tools and sets the mode",
    body: { input: "x", tools: [{ type: "function", name: "a" }, { type: "function", name: "b" }], tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "b" }] } },
    expect: { tools: [{ type: "function", function: { name: "b", parameters: { type: "object", properties: {} } } }], tool_choice: "required" },
  },
  { name: "only hosted tools and tool_choice auto: no tools, no choice upstream", body: { input: "x", tools: [{ type: "web_search" }], tool_choice: "auto" }, expect: { messages: [{ role: "user", content: "x" }] } },
  { name: "string tool_choice and json_object", body: { input: "x", tool_choice: "required", tools: [{ type: "function", name: "f" }], text: { format: { type: "json_object" } } }, expect: { tool_choice: "required", response_format: { type: "json_object" } } },
];

describe("Responses request → chat request", () => {
  for (const c of cases) {
    test(c.name, () => {
      expect(translate(c.body, c.history)).toMatchObject(c.expect);
    });
  }
  test("fields only we interpret do not reach the upstream", () => {
    const out = translate({ input: "x", store: false, metadata: { a: "b" }, service_tier: "priority", previous_response_id: null, text: { format: { type: "text" } } });
    for (const k of ["store", "metadata", "service_tier", "previous_response_id", "response_format", "input", "instructions"]) expect(k in out).toBe(false);
  });
});

describe("input normalisation (what GET input_items lists)", () => {
  test("ids, typed parts and status are filled in; given ids are kept", () => {
    expect(normalizeInput("Hi", () => "msg_x")).toEqual([{ id: "msg_x", type: "message", role: "user", status: "completed", content: [{ type: "input_text", text: "Hi" }] }]);
    const items = normalizeInput(
      [{ role: "assistant", content: "Yo" }, { type: "function_call", id: "fc_keep", call_id: "c", name: "f", arguments: "{}" }, { type: "function_call_output", call_id: "c", output: "r" }],
      (p) => `${p}_new`,
    );
    expect(items).toEqual([
      { id: "msg_new", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Yo" }] },
      { id: "fc_keep", type: "function_call", call_id: "c", name: "f", arguments: "{}", status: "completed" },
      { id: "fco_new", type: "function_call_output", call_id: "c", output: "r", status: "completed" },
    ]);
  });
});

const bad: { name: string; body: Record<string, unknown>; param: string; message?: string }[] = [
  { name: "no input and no previous response", body: {}, param: "input" },
  { name: "input of the wrong type", body: { input: 5 }, param: "input" },
  { name: "unknown item type", body: { input: [{ type: "computer_call" }] }, param: "input[0].type" },
  { name: "item without type or role", body: { input: [{ content: "x" }] }, param: "input[0].type" },
  { name: "bad role", body: { input: [{ role: "tool", content: "x" }] }, param: "input[0].role" },
  { name: "content of the wrong type", body: { input: [{ role: "user", content: 3 }] }, param: "input[0].content" },
  { name: "unknown content part", body: { input: [{ role: "user", content: [{ type: "input_audio" }] }] }, param: "input[0].content[0].type" },
  { name: "image by file id", body: { input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1" }] }] }, param: "input[0].content[0].image_url" },
  { name: "function_call without call_id", body: { input: [{ type: "function_call", name: "f", arguments: "{}" }] }, param: "input[0].call_id" },
  { name: "function_call_output for no call", body: { input: [{ role: "user", content: "x" }, { type: "function_call_output", call_id: "call_none", output: "r" }] }, param: "input[1].call_id" },
  { name: "tool_choice forcing a hosted tool that is present", body: { input: "x", tools: [{ type: "file_search", vector_store_ids: ["vs_1"] }], tool_choice: { type: "file_search" } }, param: "tool_choice.type", message: "file_search" },
  { name: "item_reference to an unknown id", body: { input: [{ type: "item_reference", id: "rs_unknown" }] }, param: "input[0].id", message: "rs_unknown" },
  { name: "tool_choice naming no tool", body: { input: "x", tools: [{ type: "function", name: "f" }], tool_choice: { type: "function", name: "g" } }, param: "tool_choice.name" },
  { name: "hosted tool_choice", body: { input: "x", tool_choice: { type: "web_search_preview" } }, param: "tool_choice.type" },
  { name: "json_schema without schema", body: { input: "x", text: { format: { type: "json_schema", name: "n" } } }, param: "text.format.schema" },
  { name: "temperature above 2", body: { input: "x", temperature: 2.5 }, param: "temperature" },
  { name: "max_output_tokens zero", body: { input: "x", max_output_tokens: 0 }, param: "max_output_tokens" },
  { name: "metadata values must be strings", body: { input: "x", metadata: { a: 1 } }, param: "metadata" },
  { name: "empty item list", body: { input: [] }, param: "input" },
  { name: "background mode", body: { input: "x", background: true }, param: "background" },
];

describe("Responses request errors name the field", () => {
  for (const c of bad) {
    test(c.name, () => {
      let err: unknown;
      try {
        translate(c.body);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(DomainError);
      expect((err as DomainError).kind).toBe("invalid_request");
      expect((err as DomainError).param).toBe(c.param);
      if (c.message) expect((err as DomainError).message).toContain(c.message);
    });
  }
});
