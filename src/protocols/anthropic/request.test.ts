import { describe, expect, test } from "bun:test";
import { DomainError } from "../../errors";
import { parseCountTokensRequest, parseMessagesRequest, toChatMessages, toChatRequest } from "./request";

const base = { model: "glm-4.6", max_tokens: 1024 };

/** Request shapes as the Anthropic API documents and the SDK sends them. */
const cases: { name: string; body: Record<string, unknown>; expect: Record<string, unknown> }[] = [
  {
    name: "plain string content, string system",
    body: { ...base, system: "You are terse.", messages: [{ role: "user", content: "Hello, Claude" }] },
    expect: { model: "glm-4.6", max_tokens: 1024, messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "Hello, Claude" }] },
  },
  {
    name: "system as text blocks (with cache_control), text blocks joined",
    body: {
      ...base,
      system: [{ type: "text", text: "Rule one." }, { type: "text", text: "Rule two.", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: [{ type: "text", text: "Part A" }, { type: "text", text: "Part B" }] }],
    },
    expect: { messages: [{ role: "system", content: "Rule one.\nRule two." }, { role: "user", content: "Part A\nPart B" }] },
  },
  {
    name: "base64 and url images become image_url parts",
    body: {
      ...base,
      messages: [{
        role: "user",
        content: [
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
          { type: "text", text: "What is in these images?" },
        ],
      }],
    },
    expect: {
      messages: [{
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
          { type: "text", text: "What is in these images?" },
        ],
      }],
    },
  },
  {
    name: "assistant tool_use + user tool_result (error flag, block content) → tool_calls + tool messages first",
    body: {
      ...base,
      messages: [
        { role: "user", content: "What's the weather in SF and NYC?" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "Two calls.", signature: "EqQBCgIYAhIM" },
            { type: "text", text: "Checking both." },
            { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "get_weather", input: { location: "San Francisco, CA" } },
            { type: "tool_use", id: "toolu_01B", name: "get_weather", input: { location: "New York, NY" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_01A09q90qw90lq917835lq9", content: "15 degrees" },
            { type: "tool_result", tool_use_id: "toolu_01B", content: [{ type: "text", text: "timeout" }], is_error: true },
            { type: "text", text: "Summarise." },
          ],
        },
      ],
    },
    expect: {
      messages: [
        { role: "user", content: "What's the weather in SF and NYC?" },
        {
          role: "assistant",
          content: "Checking both.",
          tool_calls: [
            { id: "toolu_01A09q90qw90lq917835lq9", type: "function", function: { name: "get_weather", arguments: '{"location":"San Francisco, CA"}' } },
            { id: "toolu_01B", type: "function", function: { name: "get_weather", arguments: '{"location":"New York, NY"}' } },
          ],
        },
        { role: "tool", tool_call_id: "toolu_01A09q90qw90lq917835lq9", content: "15 degrees" },
        { role: "tool", tool_call_id: "toolu_01B", content: "Error: timeout" },
        { role: "user", content: "Summarise." },
      ],
    },
  },
  {
    name: "tools, tool_choice tool + disable_parallel_tool_use, sampling, stop_sequences, metadata, thinking",
    body: {
      ...base,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ name: "get_stock_price", description: "Get the current stock price", input_schema: { type: "object", properties: { ticker: { type: "string" } }, required: ["ticker"] } }],
      tool_choice: { type: "tool", name: "get_stock_price", disable_parallel_tool_use: true },
      temperature: 0.7, top_p: 0.9, top_k: 50, stop_sequences: ["\n\nHuman:"], metadata: { user_id: "u-123" },
      thinking: { type: "enabled", budget_tokens: 16_000 }, max_tokens: 20_000,
    },
    expect: {
      max_tokens: 20_000,
      tools: [{ type: "function", function: { name: "get_stock_price", description: "Get the current stock price", parameters: { type: "object", properties: { ticker: { type: "string" } }, required: ["ticker"] } } }],
      tool_choice: { type: "function", function: { name: "get_stock_price" } },
      parallel_tool_calls: false,
      temperature: 0.7, top_p: 0.9, top_k: 50, stop: ["\n\nHuman:"], user: "u-123", reasoning_effort: "medium",
    },
  },
  { name: "tool_choice any → required", body: { ...base, messages: [{ role: "user", content: "x" }], tools: [{ name: "t", input_schema: { type: "object" } }], tool_choice: { type: "any" } }, expect: { tool_choice: "required" } },
  {
    name: "system entries inside messages stay in place; one between tool_use and tool_result follows the results",
    body: {
      ...base,
      messages: [
        { role: "user", content: "go" },
        { role: "system", content: [{ type: "text", text: "Env: linux", cache_control: { type: "ephemeral" } }] },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } }] },
        { role: "system", content: "Reminder." },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" }] },
      ],
    },
    expect: {
      messages: [
        { role: "user", content: "go" },
        { role: "system", content: "Env: linux" },
        { role: "assistant", content: null, tool_calls: [{ id: "toolu_1", type: "function", function: { name: "Bash", arguments: '{"command":"ls"}' } }] },
        { role: "tool", tool_call_id: "toolu_1", content: "a.txt" },
        { role: "system", content: "Reminder." },
      ],
    },
  },
  { name: "adaptive thinking with output_config.effort high", body: { ...base, messages: [{ role: "user", content: "x" }], thinking: { type: "adaptive" }, output_config: { effort: "high" } }, expect: { reasoning_effort: "high" } },
  { name: "effort max asks an engine for high", body: { ...base, messages: [{ role: "user", content: "x" }], thinking: { type: "adaptive", display: "omitted" }, output_config: { effort: "max" } }, expect: { reasoning_effort: "high" } },
  { name: "effort low without thinking", body: { ...base, messages: [{ role: "user", content: "x" }], output_config: { effort: "low" } }, expect: { reasoning_effort: "low" } },
  {
    name: "a deferred tool is sent once a tool_reference loads it; server tools are left out",
    body: {
      ...base,
      tools: [
        { name: "ToolSearch", input_schema: { type: "object" } },
        { name: "WebFetch", input_schema: { type: "object", properties: { url: { type: "string" } } }, defer_loading: true },
        { name: "NotebookEdit", input_schema: { type: "object" }, defer_loading: true },
        { type: "web_search_20250305", name: "web_search", max_uses: 3 },
      ],
      messages: [
        { role: "user", content: "fetch it" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_s", name: "ToolSearch", input: { query: "select:WebFetch" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_s", content: [{ type: "tool_reference", tool_name: "WebFetch" }] }] },
      ],
    },
    expect: {
      tools: [
        { type: "function", function: { name: "ToolSearch", parameters: { type: "object" } } },
        { type: "function", function: { name: "WebFetch", parameters: { type: "object", properties: { url: { type: "string" } } } } },
      ],
      messages: [
        { role: "user", content: "fetch it" },
        { role: "assistant", content: null, tool_calls: [{ id: "toolu_s", type: "function", function: { name: "ToolSearch", arguments: '{"query":"select:WebFetch"}' } }] },
        { role: "tool", tool_call_id: "toolu_s", content: "Tool loaded: WebFetch" },
      ],
    },
  },
  { name: "more than four stop sequences: four go upstream (all are matched locally)", body: { ...base, messages: [{ role: "user", content: "x" }], stop_sequences: ["a", "b", "c", "d", "e"] }, expect: { stop: ["a", "b", "c", "d"] } },
  { name: "tool_choice none", body: { ...base, messages: [{ role: "user", content: "x" }], tool_choice: { type: "none" } }, expect: { tool_choice: "none" } },
];

test("thinking disabled sends no reasoning knob", () => {
  const out = toChatRequest(parseMessagesRequest({ ...base, messages: [{ role: "user", content: "x" }], thinking: { type: "disabled" } }));
  expect("reasoning_effort" in out).toBe(false);
});

describe("Messages request → chat request", () => {
  for (const c of cases) {
    test(c.name, () => {
      expect(toChatRequest(parseMessagesRequest(c.body))).toMatchObject(c.expect);
    });
  }
});

const bad: { name: string; body: Record<string, unknown>; param: string; message?: string }[] = [
  { name: "missing max_tokens", body: { model: "m", messages: [{ role: "user", content: "x" }] }, param: "max_tokens" },
  { name: "max_tokens zero", body: { ...base, max_tokens: 0, messages: [{ role: "user", content: "x" }] }, param: "max_tokens" },
  { name: "empty messages", body: { ...base, messages: [] }, param: "messages" },
  { name: "empty user content", body: { ...base, messages: [{ role: "user", content: [] }] }, param: "messages[0].content" },
  { name: "bad role", body: { ...base, messages: [{ role: "tool", content: "x" }] }, param: "messages[0].role" },
  { name: "non-text block in a system entry", body: { ...base, messages: [{ role: "user", content: "x" }, { role: "system", content: [{ type: "image", source: { type: "url", url: "https://x/y.png" } }] }] }, param: "messages[1].content[0].type" },
  { name: "unknown output_config.effort", body: { ...base, messages: [{ role: "user", content: "x" }], output_config: { effort: "extreme" } }, param: "output_config.effort" },
  { name: "temperature above 1", body: { ...base, temperature: 1.5, messages: [{ role: "user", content: "x" }] }, param: "temperature" },
  {
    name: "tool_result with no tool_use",
    body: { ...base, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x", content: "r" }] }] },
    param: "messages[0].content[0].tool_use_id", message: "toolu_x",
  },
  {
    name: "tool_result answering a tool_use two turns back",
    body: {
      ...base,
      messages: [
        { role: "user", content: "a" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_old", name: "t", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_old", content: "r" }] },
        { role: "assistant", content: "ok" },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_old", content: "again" }] },
      ],
    },
    param: "messages[4].content[0].tool_use_id",
  },
  { name: "tool_use without input", body: { ...base, messages: [{ role: "user", content: "a" }, { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "t" }] }] }, param: "messages[1].content[0].input" },
  { name: "unknown block type", body: { ...base, messages: [{ role: "user", content: [{ type: "audio" }] }] }, param: "messages[0].content[0].type" },
  { name: "image without data", body: { ...base, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png" } }] }] }, param: "messages[0].content[0].source.data" },
  { name: "tool_choice forcing a server tool", body: { ...base, messages: [{ role: "user", content: "x" }], tools: [{ type: "web_search_20250305", name: "web_search" }], tool_choice: { type: "tool", name: "web_search" } }, param: "tool_choice.name", message: "web_search" },
  { name: "client tool without a name", body: { ...base, messages: [{ role: "user", content: "x" }], tools: [{ input_schema: { type: "object" } }] }, param: "tools[0].name" },
  { name: "tool without input_schema", body: { ...base, messages: [{ role: "user", content: "x" }], tools: [{ name: "t" }] }, param: "tools[0].input_schema" },
  { name: "tool_choice any without tools", body: { ...base, messages: [{ role: "user", content: "x" }], tool_choice: { type: "any" } }, param: "tool_choice" },
  { name: "thinking budget not below max_tokens", body: { ...base, messages: [{ role: "user", content: "x" }], thinking: { type: "enabled", budget_tokens: 1024 } }, param: "thinking.budget_tokens" },
];

describe("Messages request errors name the field", () => {
  for (const c of bad) {
    test(c.name, () => {
      let err: unknown;
      try {
        toChatRequest(parseMessagesRequest(c.body));
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

test("count_tokens needs no max_tokens and shares the message translation", () => {
  const req = parseCountTokensRequest({ model: "m", system: "s", messages: [{ role: "user", content: "hi" }] });
  expect(toChatMessages(req)).toEqual([{ role: "system", content: "s" }, { role: "user", content: "hi" }]);
});
