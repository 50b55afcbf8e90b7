/**
 * OpenAI Responses end to end over real HTTP: the official `openai` SDK → Switchyard → a fake
 * OpenAI-compatible upstream. Checks the translation (text, function calls, reasoning), the
 * stream helper's strict event checks, stored responses (retrieve, delete, input items,
 * previous_response_id, ownership), the exact charge and the error shapes. On both stores.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import type { Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import type { ScriptedUpstream } from "./support/scripted-upstream";
import { resetDualStack, startDualStack, stopDualStack } from "./support/fake-stack";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { settled, storeState } from "./support/ledger-state";
import { describeEachStore } from "./support/stores";
import { billingChecks } from "./support/billing-checks";
import { SseParser } from "../src/protocols/sse";

const MODEL = "glm-4.6"; // turbo-capable
const WORDS = ["Hello", " from", " the", " fake", " upstream", "."];
const PROMPT_TOKENS = 11;
const weatherTool = { type: "function" as const, name: "get_weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }, strict: true };

describeEachStore("OpenAI Responses", (store) => {
  let fake: FakeUpstream;
  let scripted: ScriptedUpstream;
  let h: Harness;
  let hs: Harness;
  let acct: { id: string; key: string };
  let client: OpenAI;
  let other: OpenAI;
  let scriptedClient: OpenAI;

  beforeAll(async () => {
    ({ fake, scripted, h, hs, acct } = await startDualStack(store));
    client = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1", maxRetries: 0 });
    other = new OpenAI({ apiKey: (await h.account(10, "other")).key, baseURL: h.base + "/v1", maxRetries: 0 });
    scriptedClient = new OpenAI({ apiKey: (await hs.account(10)).key, baseURL: hs.base + "/v1", maxRetries: 0 });
  }, 60_000);
  afterAll(() => stopDualStack({ fake, scripted, h, hs }));
  beforeEach(() => resetDualStack(fake, scripted));

  const { charged, rejected } = billingChecks(() => ({ h, accountId: acct.id, upstream: fake }));

  describe("responses.create", () => {
    test("string input: resp_ id, message output, usage with the exact cost", async () => {
      let r!: OpenAI.Responses.Response;
      let headers!: Headers;
      const units = await charged(async () => {
        const out = await client.responses.create({ model: MODEL, input: "Say hello.", instructions: "Be brief.", temperature: 0.3, max_output_tokens: 100, metadata: { ticket: "42" } }).withResponse();
        r = out.data;
        headers = out.response.headers;
      });
      const expected = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
      expect(units).toBe(expected);
      expect(r.id).toMatch(/^resp_/);
      expect(r).toMatchObject({ object: "response", status: "completed", model: MODEL, instructions: "Be brief.", metadata: { ticket: "42" }, service_tier: "default", store: true });
      expect(r.output).toHaveLength(1);
      expect(r.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: WORDS.join("") }] });
      expect(r.output_text).toBe(WORDS.join(""));
      expect(r.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: WORDS.length, total_tokens: PROMPT_TOKENS + WORDS.length });
      expect((r.usage as unknown as { cost: number }).cost).toBe(Number(unitsToUsd(expected)));
      expect(headers.get("x-request-cost")).toBe(unitsToUsd(expected));
      expect(fake.requests[0]).toMatchObject({ max_tokens: 100, temperature: 0.3, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }] });
      expect(fake.requests[0]!.metadata).toBeUndefined();
    });

    test("function calls, then previous_response_id + function_call_output continues the conversation", async () => {
      fake.behave({ toolCall: { name: "get_weather", arguments: '{"city":"Paris"}' } });
      const first = await client.responses.create({ model: MODEL, input: [{ role: "user", content: "Weather in Paris?" }], tools: [weatherTool], tool_choice: { type: "function", name: "get_weather" } });
      expect(fake.requests[0]!.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: weatherTool.parameters, strict: true } }]);
      expect(fake.requests[0]!.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
      const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" });
      expect(call.call_id).toMatch(/^call_/);
      expect(call.id).toMatch(/^fc_/);

      fake.behave({});
      const second = await client.responses.create({ model: MODEL, previous_response_id: first.id, input: [{ type: "function_call_output", call_id: call.call_id, output: "18°C" }], tools: [weatherTool] });
      expect(second.previous_response_id).toBe(first.id);
      expect(fake.requests[1]!.messages).toEqual([
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [{ id: call.call_id, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: call.call_id, content: "18°C" },
      ]);

      // A third turn carries the whole chain.
      await client.responses.create({ model: MODEL, previous_response_id: second.id, input: "And tomorrow?" });
      expect(fake.requests[2]!.messages.slice(3)).toEqual([{ role: "assistant", content: WORDS.join("") }, { role: "user", content: "And tomorrow?" }]);
    });

    test("text.format json_schema becomes response_format; service_tier priority on a turbo model costs 1.5x", async () => {
      let r!: OpenAI.Responses.Response;
      const units = await charged(async () => {
        r = await client.responses.create({
          model: MODEL, input: "Name?", service_tier: "priority",
          text: { format: { type: "json_schema", name: "person", schema: { type: "object", properties: { name: { type: "string" } } }, strict: true } },
        });
      });
      expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length, true));
      expect(r.service_tier).toBe("priority");
      expect(fake.requests[0]!.response_format).toEqual({ type: "json_schema", json_schema: { name: "person", schema: { type: "object", properties: { name: { type: "string" } } }, strict: true } });
    });

    test("reasoning output and an incomplete (max_output_tokens) status", async () => {
      scripted.script({ reasoning: "Thinking hard.", content: "Partial", finishReason: "length" });
      const r = await scriptedClient.responses.create({ model: MODEL, input: "Go", max_output_tokens: 7 });
      expect(r.status).toBe("incomplete");
      expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
      expect(r.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
      expect((r.output[0] as OpenAI.Responses.ResponseReasoningItem).content).toEqual([{ type: "reasoning_text", text: "Thinking hard." }]);
    });
  });

  describe("stored responses", () => {
    test("retrieve, input_items, delete; only the owner sees them", async () => {
      const r = await client.responses.create({ model: MODEL, input: [{ role: "user", content: [{ type: "input_text", text: "Hi" }] }, { role: "user", content: "again" }] });
      const got = await client.responses.retrieve(r.id);
      expect(got.id).toBe(r.id);
      expect(got.output_text).toBe(WORDS.join(""));
      const items = await client.responses.inputItems.list(r.id, { order: "asc" });
      expect(items.data.map((i) => (i as { content: { text: string }[] }).content[0]!.text)).toEqual(["Hi", "again"]);
      expect(items.data.every((i) => typeof i.id === "string" && i.id.startsWith("msg_"))).toBe(true);

      expect(await other.responses.retrieve(r.id).catch((e) => e)).toBeInstanceOf(OpenAI.NotFoundError);
      expect(await other.responses.delete(r.id).catch((e) => e)).toBeInstanceOf(OpenAI.NotFoundError);
      const foreignPrev = await other.responses.create({ model: MODEL, previous_response_id: r.id, input: "x" }).catch((e) => e);
      expect(foreignPrev).toBeInstanceOf(OpenAI.NotFoundError);
      expect(foreignPrev.param).toBe("previous_response_id");

      await client.responses.delete(r.id);
      expect(await client.responses.retrieve(r.id).catch((e) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    });

    test("store:false keeps nothing", async () => {
      const r = await client.responses.create({ model: MODEL, input: "Hi", store: false });
      expect((r as unknown as { store: boolean }).store).toBe(false);
      expect(await client.responses.retrieve(r.id).catch((e) => e)).toBeInstanceOf(OpenAI.NotFoundError);
      expect(await h.probe.storedResponse(r.id)).toEqual({ rows: 0, items: 0 });
    });

    test("item_reference resolves the owner's stored input and output items; another account's read as unknown; items go with their response", async () => {
      const r = await client.responses.create({ model: MODEL, input: [{ role: "user", content: "Remember me." }] });
      const inputId = (await client.responses.inputItems.list(r.id)).data[0]!.id;
      const outputId = r.output[0]!.id!;
      expect(await h.probe.storedResponse(r.id)).toEqual({ rows: 1, items: 2 });
      await client.responses.create({ model: MODEL, input: [{ type: "item_reference", id: inputId }, { type: "item_reference", id: outputId }, { role: "user", content: "Next." }] } as never);
      expect(fake.requests[1]!.messages).toEqual([
        { role: "user", content: "Remember me." },
        { role: "assistant", content: WORDS.join("") },
        { role: "user", content: "Next." },
      ]);
      const foreign = await other.responses.create({ model: MODEL, input: [{ type: "item_reference", id: outputId }] } as never).catch((e) => e);
      expect(foreign).toBeInstanceOf(OpenAI.BadRequestError);
      await client.responses.delete(r.id);
      expect(await h.probe.storedResponse(r.id)).toEqual({ rows: 0, items: 0 });
    });
  });

  describe("responses.stream", () => {
    test("text: finalResponse(), output_text deltas, cost in response.completed, stored", async () => {
      let deltas = "";
      let completed: OpenAI.Responses.ResponseCompletedEvent | undefined;
      let final!: OpenAI.Responses.Response;
      const units = await charged(async () => {
        const stream = client.responses.stream({ model: MODEL, input: "Say hello." });
        stream.on("response.output_text.delta", (e) => (deltas += e.delta));
        stream.on("response.completed", (e) => (completed = e));
        final = await stream.finalResponse();
      });
      const expected = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
      expect(units).toBe(expected);
      expect(deltas).toBe(WORDS.join(""));
      expect(final.status).toBe("completed");
      expect(final.output_text).toBe(WORDS.join(""));
      expect((completed!.response.usage as unknown as { cost: number }).cost).toBe(Number(unitsToUsd(expected)));
      expect((await client.responses.retrieve(final.id)).output_text).toBe(WORDS.join(""));
    });

    test("wire format: event names, increasing sequence numbers, documented order, ending at response.completed (no [DONE])", async () => {
      const res = await fetch(h.base + "/v1/responses", {
        method: "POST",
        headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, input: "Say hello.", stream: true }),
      });
      const text = await res.text();
      expect(text).not.toContain("[DONE]");
      const events = new SseParser().push(text);
      expect(events.at(-1)!.event).toBe("response.completed");
      // Every data line is JSON (strict SSE-to-JSON clients parse each one).
      const frames = events.map((e) => ({ name: e.event, data: JSON.parse(e.data) }));
      frames.forEach((f, i) => {
        expect(f.data.type).toBe(f.name);
        expect(f.data.sequence_number).toBe(i);
      });
      const names = frames.map((f) => f.name).filter((n) => n !== "response.output_text.delta");
      expect(names).toEqual([
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed",
      ]);
    });

    test("function call arguments stream and assemble", async () => {
      fake.behave({ toolCall: { name: "get_weather", arguments: '{"city":"Paris"}' } });
      let args = "";
      const stream = client.responses.stream({ model: MODEL, input: "Weather?", tools: [weatherTool] });
      stream.on("response.function_call_arguments.delta", (e) => (args += e.delta));
      const final = await stream.finalResponse();
      expect(args).toBe('{"city":"Paris"}');
      expect(final.output).toHaveLength(1);
      expect(final.output[0]).toMatchObject({ type: "function_call", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" });
    });

    test("reasoning then text then two function calls, all through the strict stream helper", async () => {
      scripted.script({ reasoning: "Plan: call both.", content: "Checking.", toolCalls: [{ name: "a", arguments: '{"x":1}' }, { name: "b", arguments: '{"y":2}' }] });
      const final = await scriptedClient.responses.stream({ model: MODEL, input: "Go" }).finalResponse();
      expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message", "function_call", "function_call"]);
      expect(final.output.slice(2).map((o) => (o as OpenAI.Responses.ResponseFunctionToolCall).arguments)).toEqual(['{"x":1}', '{"y":2}']);
      expect(final.output_text).toBe("Checking.");
    });

    test("parallel calls with interleaved argument deltas: each output_item.done carries its complete arguments", async () => {
      scripted.script({ toolCalls: [{ name: "a", arguments: '{"city":"Paris","unit":"c"}' }, { name: "b", arguments: '{"city":"Rome","days":3}' }], interleaveToolCalls: true });
      const done: OpenAI.Responses.ResponseOutputItem[] = [];
      const stream = scriptedClient.responses.stream({ model: MODEL, input: "Go" });
      stream.on("response.output_item.done", (e) => done.push(e.item));
      const final = await stream.finalResponse();
      const parsed = (items: OpenAI.Responses.ResponseOutputItem[]) => items.map((o) => JSON.parse((o as OpenAI.Responses.ResponseFunctionToolCall).arguments));
      expect(parsed(done)).toEqual([{ city: "Paris", unit: "c" }, { city: "Rome", days: 3 }]);
      expect(final.output.map((o) => (o as OpenAI.Responses.ResponseFunctionToolCall).name)).toEqual(["a", "b"]);
      expect(parsed(final.output)).toEqual(parsed(done));
    });

    test("an upstream failure mid-stream ends in response.failed and costs nothing", async () => {
      fake.behave({ errorAfterChunks: 2 });
      const before = await storeState(h, acct.id);
      const final = await client.responses.stream({ model: MODEL, input: "Hi" }).finalResponse();
      expect(final.status).toBe("failed");
      expect(final.error?.code).toBe("server_error");
      expect(await settled(h, acct.id)).toEqual(before);
      expect(await client.responses.retrieve(final.id).catch((e) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    });
  });

  describe("bad input: OpenAI error shape, nothing billed", () => {
    test("unknown previous_response_id → 404", async () => {
      const err = await rejected(() => client.responses.create({ model: MODEL, previous_response_id: "resp_doesnotexist", input: "x" }));
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.error).toMatchObject({ type: "not_found_error", param: "previous_response_id" });
    });

    test("malformed items → 400 naming the item", async () => {
      const orphan = await rejected(() => client.responses.create({ model: MODEL, input: [{ type: "function_call_output", call_id: "call_nope", output: "x" }] }));
      expect(orphan).toBeInstanceOf(OpenAI.BadRequestError);
      expect(orphan.param).toBe("input[0].call_id");
      const unknown = await rejected(() => client.responses.create({ model: MODEL, input: [{ type: "file_search_call" } as never] }));
      expect(unknown.param).toBe("input[0].type");
      const role = await rejected(() => client.responses.create({ model: MODEL, input: [{ role: "robot", content: "x" } as never] }));
      expect(role.param).toBe("input[0].role");
      const hosted = await rejected(() => client.responses.create({ model: MODEL, input: "x", tools: [{ type: "web_search" }], tool_choice: { type: "web_search" } as never }));
      expect(hosted.param).toBe("tool_choice.type");
      expect(hosted.message).toContain("web_search");
      const reference = await rejected(() => client.responses.create({ model: MODEL, input: [{ type: "item_reference", id: "msg_nobody_stored" }] }));
      expect(reference.param).toBe("input[0].id");
      expect(reference.message).toContain("msg_nobody_stored");
      const big = await rejected(() => client.responses.create({ model: MODEL, input: "x", max_output_tokens: 40_000 }));
      expect(big.param).toBe("max_output_tokens");
    });

    test("missing input, wrong endpoint model", async () => {
      const missing = await rejected(() => client.responses.create({ model: MODEL } as never));
      expect(missing.param).toBe("input");
      const wrong = await rejected(() => client.responses.create({ model: "embedding-300m", input: "x" }));
      expect(wrong).toBeInstanceOf(OpenAI.BadRequestError);
      expect(wrong.code).toBe("wrong_endpoint");
      expect(wrong.message).toContain("POST /v1/embeddings");
    });
  });
});
