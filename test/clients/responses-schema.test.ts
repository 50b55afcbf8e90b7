/**
 * Every shape /v1/responses produces, checked against the OpenAI Responses JSON schema (derived
 * from the pinned openai package's types): plain bodies and streams, reasoning with and without
 * summaries, (parallel, namespaced) function calls, truncated and failed turns, stored objects.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "../support/harness";
import { startScriptedUpstream, type Script, type ScriptedUpstream } from "../support/scripted-upstream";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream";
import { responsesSchema, type SchemaCheck } from "../support/responses-schema";
import { readResponsesAnswer } from "../support/responses-events";

let scripted: ScriptedUpstream;
let broken: FakeUpstream;
let h: Harness;
let hb: Harness;
let key: string;
let brokenKey: string;
let schema: SchemaCheck;

beforeAll(async () => {
  scripted = startScriptedUpstream();
  broken = startFakeUpstream({ errorAfterChunks: 2 });
  [h, hb] = await Promise.all([startHarness({ SWITCHYARD_UPSTREAM_URL: scripted.url }), startHarness({ SWITCHYARD_UPSTREAM_URL: broken.url })]);
  key = (await h.account(10)).key;
  brokenKey = (await hb.account(10)).key;
  schema = await responsesSchema();
}, 60_000);

afterAll(async () => {
  await Promise.all([h.stop(), hb.stop()]);
  scripted.stop();
  broken.stop();
});

async function post(base: string, apiKey: string, body: Record<string, unknown>) {
  const res = await fetch(base + "/v1/responses", { method: "POST", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, body: JSON.stringify({ model: "glm-4.6", ...body }) });
  expect(res.status).toBe(200);
  return { res, ...readResponsesAnswer(await res.text(), res.headers.get("content-type") ?? "") };
}

function valid(answer: { response: unknown; events: Record<string, unknown>[] }) {
  expect(schema.response(answer.response)).toEqual([]);
  for (const e of answer.events) expect(schema.event(e)).toEqual([]);
  for (const e of answer.events) if (e.response) expect(schema.response(e.response)).toEqual([]);
}

const namespaceTools = [
  { type: "function", name: "exec_command", parameters: { type: "object", properties: { cmd: { type: "string" } } } },
  { type: "namespace", name: "multi_agent_v1", description: "Sub-agents", tools: [{ type: "function", name: "list_agents", parameters: { type: "object", properties: {} } }] },
  { type: "web_search", external_web_access: false },
];

const cases: { name: string; script: Script; body: Record<string, unknown>; check?: (a: Awaited<ReturnType<typeof post>>) => void }[] = [
  { name: "text", script: { content: "Hello there." }, body: { input: "hi" } },
  { name: "reasoning, no summary", script: { reasoning: "Think.", content: "Done." }, body: { input: "hi" } },
  {
    name: "reasoning with a summary asked for", script: { reasoning: "Think hard.", content: "Done." }, body: { input: "hi", reasoning: { effort: "high", summary: "auto" } },
    check: (a) => {
      const rs = a.response!.output.find((i: { type: string }) => i.type === "reasoning");
      expect(rs.summary).toEqual([{ type: "summary_text", text: "Think hard." }]);
      expect(a.response!.reasoning).toEqual({ effort: "high", summary: "auto" });
      if (a.events.length) expect(a.events.some((e) => e.type === "response.reasoning_summary_text.delta")).toBe(true);
    },
  },
  {
    name: "parallel function calls, interleaved upstream", script: { toolCalls: [{ name: "a", arguments: '{"x":1}' }, { name: "b", arguments: '{"y":2}' }], interleaveToolCalls: true },
    body: { input: "go", tools: [{ type: "function", name: "a" }, { type: "function", name: "b" }] },
  },
  {
    name: "a namespaced call comes back with its namespace; web_search is ignored and named", script: { toolCalls: [{ name: "list_agents", arguments: "{}" }] },
    body: { input: "who is there?", tools: namespaceTools },
    check: (a) => {
      expect(a.res.headers.get("x-switchyard-ignored-tools")).toBe("web_search");
      const call = a.response!.output.find((i: { type: string }) => i.type === "function_call");
      expect(call).toMatchObject({ name: "list_agents", namespace: "multi_agent_v1" });
    },
  },
  { name: "text after a tool call's arguments", script: { toolCalls: [{ name: "a", arguments: '{"q":"long argument text"}' }], trailingContent: " (done)" }, body: { input: "go", tools: [{ type: "function", name: "a" }] } },
  { name: "truncated (incomplete)", script: { content: "Once upon", finishReason: "length" }, body: { input: "story", max_output_tokens: 5 } },
  { name: "cached and reasoning tokens", script: { reasoning: "r", content: "ok", promptTokens: 900, cachedTokens: 512, completionTokens: 30, reasoningTokens: 12 }, body: { input: "hi" },
    check: (a) => expect(a.response!.usage).toMatchObject({ input_tokens: 900, input_tokens_details: { cached_tokens: 512 }, output_tokens: 30, output_tokens_details: { reasoning_tokens: 12 } }) },
];

describe("Responses bodies and stream events match the OpenAI schema", () => {
  for (const c of cases) {
    for (const stream of [false, true]) {
      test(`${c.name}${stream ? " (stream)" : ""}`, async () => {
        scripted.script(c.script);
        const a = await post(h.base, key, { ...c.body, stream });
        valid(a);
        expect(a.response!.status).toBe(c.script.finishReason === "length" ? "incomplete" : "completed");
        c.check?.(a);
        // The stored object is the same shape.
        const stored = await fetch(`${h.base}/v1/responses/${a.response!.id}`, { headers: { authorization: `Bearer ${key}` } });
        expect(schema.response(await stored.json())).toEqual([]);
      });
    }
  }

  test("an upstream failure mid-stream ends in a valid response.failed", async () => {
    const a = await post(hb.base, brokenKey, { input: "hi", stream: true });
    valid(a);
    expect(a.events.at(-1)!.type).toBe("response.failed");
  });
});
