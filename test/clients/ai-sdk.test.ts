/**
 * The Vercel AI SDK (`ai` + `@ai-sdk/openai`, pinned devDependencies) through its Responses model,
 * asking for a reasoning model (`gpt-5-mini`, mapped by an alias) with a tool over two steps:
 * on the second step the SDK sends its earlier reasoning and text items back as
 * `item_reference`s, which resolve against the stored response. Reasoning summaries reach
 * `reasoningText`; every Responses body and stream event is checked against the OpenAI Responses
 * JSON schema; the ledger charges exactly the upstream's usage.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { startHarness, type Harness } from "../support/harness";
import { startScriptedUpstream, type Script, type ScriptedUpstream } from "../support/scripted-upstream";
import { startCapturingProxy, type CapturingProxy } from "../support/capturing-proxy";
import { billingChecks } from "../support/billing-checks";
import { expectedChatCost } from "../support/expected-cost";
import { responsesSchema } from "../support/responses-schema";
import { readResponsesAnswer } from "../support/responses-events";
import { saveClientFixture } from "./fixtures";

const MODEL = "glm-4.6";
const FINAL = "It is 21 degrees and sunny in Paris.";

let upstream: ScriptedUpstream;
let h: Harness;
let proxy: CapturingProxy;
let acct: { id: string; key: string };
const served: Script[] = [];
const toolRuns: string[] = [];

beforeAll(async () => {
  upstream = startScriptedUpstream();
  upstream.script((body) => {
    const done = (body.messages as { role: string }[]).some((m) => m.role === "tool");
    const s: Script = done
      ? { reasoning: "The tool answered; summarise.", content: FINAL, promptTokens: 310, completionTokens: 24, cachedTokens: 256, reasoningTokens: 9 }
      : { reasoning: "I need the weather tool for Paris.", content: "Let me check.", toolCalls: [{ name: "weather", arguments: '{"city":"Paris"}' }], promptTokens: 250, completionTokens: 30, reasoningTokens: 11 };
    served.push(s);
    return s;
  });
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url, SWITCHYARD_MODEL_ALIASES: JSON.stringify({ "gpt-5*": MODEL }) });
  acct = await h.account(10);
  proxy = startCapturingProxy(h.base);
});

afterAll(async () => {
  proxy?.stop();
  await h?.stop();
  upstream?.stop();
});

const bill = billingChecks(() => ({ h, accountId: acct.id, upstream }));

const weather = tool({
  description: "Current weather for a city",
  inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }),
  execute: async ({ city }) => {
    toolRuns.push(city);
    return { city, celsius: 21, sky: "sunny" };
  },
});

const provider = () => createOpenAI({ baseURL: proxy.origin + "/v1", apiKey: acct.key });
const options = { openai: { reasoningSummary: "auto", reasoningEffort: "low" } };

async function checkSchemas(from: number): Promise<void> {
  const schema = await responsesSchema();
  const turns = proxy.captured.slice(from).filter((c) => c.path === "/v1/responses");
  expect(turns.length).toBeGreaterThanOrEqual(2);
  for (const t of turns) {
    expect(t.status).toBe(200);
    const answer = readResponsesAnswer(await t.responseText, t.responseHeaders["content-type"] ?? "");
    expect(schema.response(answer.response)).toEqual([]);
    for (const e of answer.events) expect(schema.event(e)).toEqual([]);
  }
}

for (const mode of ["generateText", "streamText"] as const) {
  test(`${mode}: reasoning model + tool over two steps, item_reference resolved, schema-valid, billed exactly`, async () => {
    served.length = 0;
    toolRuns.length = 0;
    const from = proxy.captured.length;
    let text = "";
    let reasoning = "";
    let steps = 0;
    const units = await bill.charged(async () => {
      const args = { model: provider().responses("gpt-5-mini"), prompt: "What is the weather in Paris?", tools: { weather }, stopWhen: stepCountIs(3), providerOptions: options };
      if (mode === "generateText") {
        const r = await generateText(args);
        text = r.text;
        reasoning = r.steps.map((s) => s.reasoningText ?? "").join("|");
        steps = r.steps.length;
      } else {
        const r = streamText(args);
        text = await r.text;
        reasoning = (await r.steps).map((s) => s.reasoningText ?? "").join("|");
        steps = (await r.steps).length;
      }
    });
    expect(text).toContain(FINAL);
    expect(steps).toBe(2);
    expect(toolRuns).toEqual(["Paris"]);
    expect(reasoning).toContain("I need the weather tool for Paris.");
    expect(reasoning).toContain("The tool answered; summarise.");
    expect(units).toBe(served.reduce((n, s) => n + expectedChatCost(MODEL, s.promptTokens!, s.completionTokens!, false, { cached: s.cachedTokens }), 0));

    // The second step referred to stored items instead of repeating them, and they resolved.
    const turns = proxy.captured.slice(from).filter((c) => c.path === "/v1/responses");
    const second = turns[1]!;
    const refs = (second.body.input as { type: string; id?: string }[]).filter((i) => i.type === "item_reference");
    expect(refs.length).toBeGreaterThan(0);
    const chat = upstream.requests.at(-1)!;
    expect(chat.messages.some((m: { role: string; tool_calls?: unknown[] }) => m.role === "assistant" && m.tool_calls?.length)).toBe(true);
    expect(chat.messages.find((m: { role: string }) => m.role === "tool").content).toContain("sunny");
    await checkSchemas(from);
    if (mode === "streamText") saveClientFixture("ai-sdk", turns.map((t) => t.body), { headers: second.headers });
  }, 60_000);
}

test("an item_reference to another account's stored item is a 400 naming it, and bills nothing", async () => {
  const stored = proxy.captured.flatMap((c) => (c.body?.input ?? []) as { type: string; id?: string }[]).find((i) => i.type === "item_reference");
  expect(stored).toBeDefined();
  const other = await h.account(1, "other");
  const before = h.ledgerSum(other.id);
  const res = await fetch(h.base + "/v1/responses", {
    method: "POST",
    headers: { authorization: `Bearer ${other.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "glm-4.6", input: [{ role: "user", content: "hi" }, { type: "item_reference", id: stored!.id }] }),
  });
  expect(res.status).toBe(400);
  const body = (await res.json()) as { error: { param: string; message: string } };
  expect(body.error.param).toBe("input[1].id");
  expect(body.error.message).toContain(stored!.id!);
  expect(h.ledgerSum(other.id)).toBe(before);
});
