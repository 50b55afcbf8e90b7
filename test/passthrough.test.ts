/**
 * Pass-through: fields Switchyard does not interpret reach the upstream unchanged, and what the
 * upstream returns for them comes back unchanged, with only id/model (and service_tier) ours.
 * Tool calls stream correctly through the official `openai` SDK.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { startHarness, type Harness } from "./support/harness";
import { chunk, startScripted, type Reply, type ScriptedUpstream, type Step } from "./support/multi-upstream";
import { settled } from "./support/ledger-state";

const MODEL = "qwen3-coder-480b-a35b";

const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: true } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: { tz: { type: "string" } } } } },
] as const;

const passThrough = {
  tools,
  tool_choice: "auto",
  parallel_tool_calls: true,
  response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object", properties: { a: { type: "string" } } } } },
  logprobs: true,
  top_logprobs: 2,
  seed: 1234,
  temperature: 0.2,
  top_p: 0.9,
  stop: ["\n\nUser:"],
  presence_penalty: 0.1,
  frequency_penalty: 0.2,
  logit_bias: { "1234": -100 },
  n: 1,
  user: "end-user-42",
  metadata: { trace: "abc" },
  reasoning_effort: "low",
  // Engine-specific extensions go through as well.
  top_k: 20,
  chat_template_kwargs: { enable_thinking: false },
};

const logprobs = { content: [{ token: "It", logprob: -0.01, bytes: [73, 116], top_logprobs: [{ token: "It", logprob: -0.01, bytes: [73, 116] }, { token: "The", logprob: -4.2, bytes: [84, 104, 101] }] }], refusal: null };

/** Two parallel tool calls, arguments split over several chunks, as vLLM streams them. */
function toolStream(b: Record<string, any>): Reply {
  const call = (index: number, fn: Record<string, unknown>, id?: string) => ({ tool_calls: [{ index, ...(id ? { id, type: "function" } : {}), function: fn }] });
  const steps: Step[] = [
    chunk(b, { role: "assistant", content: null }),
    chunk(b, call(0, { name: "get_weather", arguments: "" }, "call_w")),
    chunk(b, call(0, { arguments: '{"ci' })),
    chunk(b, call(0, { arguments: 'ty": "Par' })),
    chunk(b, call(0, { arguments: 'is"}' })),
    chunk(b, call(1, { name: "get_time", arguments: "" }, "call_t")),
    chunk(b, call(1, { arguments: '{"tz": "Europe/Paris"}' })),
    chunk(b, {}, "tool_calls"),
    { data: { id: "u", object: "chat.completion.chunk", created: 1, model: b.model, choices: [], usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 } } },
    { raw: "data: [DONE]\n\n" },
  ];
  return { sse: steps };
}

function toolJson(b: Record<string, any>): Reply {
  return {
    status: 200,
    json: {
      id: "chatcmpl-upstream-secret", object: "chat.completion", created: 1_700_000_000, model: b.model, system_fingerprint: "fp_secret",
      choices: [{
        index: 0,
        message: { role: "assistant", content: "It is sunny.", tool_calls: [{ id: "call_w", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }], refusal: null },
        logprobs,
        finish_reason: "tool_calls",
      }],
      usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, prompt_tokens_details: { cached_tokens: 32 } },
    },
  };
}

let up: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };
let client: OpenAI;

beforeAll(async () => {
  up = startScripted((b) => (b.stream ? toolStream(b) : toolJson(b)));
  h = await startHarness({
    SWITCHYARD_ROUTES: JSON.stringify({ upstreams: { coder: { base_url: up.url } }, models: { [MODEL]: [{ upstream: "coder", model: "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8" }] } }),
  });
  acct = await h.account(10);
  client = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1", maxRetries: 0 });
});
afterAll(async () => {
  await h.stop();
  up.stop();
});
beforeEach(() => {
  up.requests.length = 0;
});

const messages = [
  { role: "system" as const, content: "Use tools." },
  { role: "user" as const, content: "Weather and time in Paris?" },
  { role: "assistant" as const, content: null, tool_calls: [{ id: "call_0", type: "function" as const, function: { name: "get_time", arguments: "{}" } }] },
  { role: "tool" as const, tool_call_id: "call_0", content: "12:00" },
];

describe("request fields", () => {
  test("every field we do not interpret reaches the upstream unchanged; model is the route's name", async () => {
    await client.chat.completions.create({ model: MODEL, messages, ...(passThrough as any) });
    const got = up.requests[0]!;
    for (const [k, v] of Object.entries(passThrough)) expect(got[k]).toEqual(v);
    expect(got.messages).toEqual(messages);
    expect(got.model).toBe("Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8");
  });
});

describe("results", () => {
  test("non-streamed: tool calls, logprobs, refusal and usage details come back unchanged; id/model ours", async () => {
    const res = await client.chat.completions.create({ model: MODEL, messages, tools: tools as any, logprobs: true, top_logprobs: 2 });
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.id).not.toContain("secret");
    expect(res.model).toBe(MODEL);
    expect((res as any).system_fingerprint).toBeUndefined();
    const c = res.choices[0]!;
    expect(c.finish_reason).toBe("tool_calls");
    expect(c.message.tool_calls).toEqual([{ id: "call_w", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }]);
    expect(c.message.content).toBe("It is sunny.");
    expect(c.logprobs).toEqual(logprobs as any);
    expect(res.usage!.prompt_tokens_details).toEqual({ cached_tokens: 32 });
    expect(res.usage!.prompt_tokens).toBe(50);
  });

  test("streamed through the SDK's stream helper: both parallel tool calls assemble with their arguments", async () => {
    const argsDone: string[] = [];
    const stream = client.chat.completions
      .stream({ model: MODEL, messages, tools: tools as any, stream_options: { include_usage: true } })
      .on("tool_calls.function.arguments.done", (e) => argsDone.push(`${e.name}:${e.arguments}`));
    const ids = new Set<string>();
    for await (const c of stream) {
      ids.add(c.id);
      expect(c.model).toBe(MODEL);
    }
    const final = await stream.finalChatCompletion();
    expect([...ids].every((id) => id.startsWith("chatcmpl-") && !id.includes("secret"))).toBe(true);
    expect(ids.size).toBe(1);
    const calls = final.choices[0]!.message.tool_calls!;
    expect(calls.map((t) => t.type === "function" && [t.id, t.function.name, JSON.parse(t.function.arguments)])).toEqual([
      ["call_w", "get_weather", { city: "Paris" }],
      ["call_t", "get_time", { tz: "Europe/Paris" }],
    ]);
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(argsDone).toEqual(['get_weather:{"city": "Paris"}', 'get_time:{"tz": "Europe/Paris"}']);
    expect(final.usage!.prompt_tokens).toBe(50);
    expect(final.usage!.completion_tokens).toBe(20);
    expect(up.requests[0]!.stream_options).toEqual({ include_usage: true });
    expect(up.requests[0]!.tools).toEqual(tools);
    const st = await settled(h, acct.id);
    expect(st.reserved).toBe(0);
  });

  test("streamed with create({stream: true}): raw tool-call deltas arrive in order, unchanged", async () => {
    const stream = await client.chat.completions.create({ model: MODEL, messages, tools: tools as any, stream: true });
    const args: string[] = [];
    for await (const c of stream) {
      for (const t of c.choices[0]?.delta?.tool_calls ?? []) args.push(`${t.index}:${t.function?.arguments ?? ""}`);
    }
    expect(args).toEqual(["0:", '0:{"ci', '0:ty": "Par', '0:is"}', "1:", '1:{"tz": "Europe/Paris"}']);
  });
});
