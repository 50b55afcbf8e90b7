/**
 * Anthropic Messages end to end over real HTTP: the official `@anthropic-ai/sdk` → Switchyard →
 * a fake OpenAI-compatible upstream. Checks the translation both ways (text, tool use, thinking,
 * stop reasons), the stream's event sequence, the exact charge, and the error classes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import type { Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import type { ScriptedUpstream } from "./support/scripted-upstream";
import { resetDualStack, startDualStack, stopDualStack } from "./support/fake-stack";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { ledgerState, settled } from "./support/ledger-state";
import { billingChecks } from "./support/billing-checks";
import { SseParser } from "../src/protocols/sse";
import { promptTokenCount } from "../src/tokens/tokens";

const MODEL = "glm-4.6"; // turbo-capable
const WORDS = ["Hello", " from", " the", " fake", " upstream", "."];
const PROMPT_TOKENS = 11;
const weatherTool = { name: "get_weather", description: "Weather for a city", input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] } };

let fake: FakeUpstream;
let scripted: ScriptedUpstream;
let h: Harness;
let hs: Harness;
let acct: { id: string; key: string };
let client: Anthropic;
let scriptedClient: Anthropic;

beforeAll(async () => {
  ({ fake, scripted, h, hs, acct } = await startDualStack());
  client = new Anthropic({ apiKey: acct.key, baseURL: h.base, maxRetries: 0 });
  scriptedClient = new Anthropic({ apiKey: (await hs.account(10)).key, baseURL: hs.base, maxRetries: 0 });
});
afterAll(() => stopDualStack({ fake, scripted, h, hs }));
beforeEach(() => resetDualStack(fake, scripted));

const { charged, rejected } = billingChecks(() => ({ h, accountId: acct.id, upstream: fake }));

const ask = { model: MODEL, max_tokens: 256, messages: [{ role: "user" as const, content: "Say hello." }] };

describe("messages.create", () => {
  test("text reply with msg_ id, end_turn, usage and the exact cost", async () => {
    let msg!: Anthropic.Message;
    let headers!: Headers;
    const units = await charged(async () => {
      // Sampling fields the upstream understands; this SDK version no longer types all of them.
      const params = { ...ask, system: "Be brief.", temperature: 0.5, top_k: 40, stop_sequences: ["END"] };
      const r = await client.messages.create(params as Anthropic.MessageCreateParamsNonStreaming).withResponse();
      msg = r.data;
      headers = r.response.headers;
    });
    const expected = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    expect(units).toBe(expected);
    expect(msg.id).toMatch(/^msg_/);
    expect(msg).toMatchObject({ type: "message", role: "assistant", model: MODEL, stop_reason: "end_turn", stop_sequence: null });
    expect(msg.content).toEqual([{ type: "text", text: WORDS.join("") } as Anthropic.TextBlock]);
    expect(msg.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: WORDS.length });
    expect((msg.usage as unknown as { cost: number }).cost).toBe(Number(unitsToUsd(expected)));
    expect(headers.get("x-request-cost")).toBe(unitsToUsd(expected));
    expect(JSON.stringify(msg)).not.toContain("upstream-secret");
    // What the upstream got: a chat-completions request.
    expect(fake.requests[0]).toMatchObject({
      model: MODEL, max_tokens: 256, temperature: 0.5, top_k: 40, stop: ["END"],
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }],
    });
    const rows = h.db.query("SELECT endpoint FROM ledger_entries WHERE request_id = ?").all(headers.get("x-request-id"));
    expect(rows).toEqual([{ endpoint: "/v1/messages" }]);
  });

  test("Authorization: Bearer works as well as x-api-key", async () => {
    const bearerClient = new Anthropic({ apiKey: null, authToken: acct.key, baseURL: h.base, maxRetries: 0 });
    const msg = await bearerClient.messages.create(ask);
    expect(msg.content[0]).toMatchObject({ type: "text" });
  });

  test("unknown anthropic-beta values and ?beta=true are accepted", async () => {
    const msg = await client.beta.messages.create({ ...ask, betas: ["made-up-feature-2099-01-01"] });
    expect(msg.stop_reason).toBe("end_turn");
  });

  test("tool use: tool_use block with toolu_ id and parsed input; tool_result goes back as a tool message", async () => {
    fake.behave({ toolCall: { name: "get_weather", arguments: '{"city":"Paris"}' } });
    const msg = await client.messages.create({ ...ask, tools: [weatherTool], tool_choice: { type: "any" } });
    expect(msg.stop_reason).toBe("tool_use");
    const use = msg.content[0] as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } });
    expect(use.id).toMatch(/^toolu_/);
    expect(fake.requests[0]!.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: weatherTool.input_schema } }]);
    expect(fake.requests[0]!.tool_choice).toBe("required");

    fake.behave({});
    await client.messages.create({
      ...ask,
      tools: [weatherTool],
      messages: [
        ...ask.messages,
        { role: "assistant", content: msg.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "18°C and sunny" }, { type: "text", text: "Thanks!" }] },
      ],
    });
    expect(fake.requests[1]!.messages.slice(1)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: use.id, type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: use.id, content: "18°C and sunny" },
      { role: "user", content: "Thanks!" },
    ]);
  });

  test("thinking, stop_sequence and max_tokens come back as Anthropic blocks and stop reasons", async () => {
    scripted.script({ reasoning: "Let me think.", content: "Answer", finishReason: "stop", stopReason: "###" });
    const msg = await scriptedClient.messages.create({ ...ask, max_tokens: 4096, stop_sequences: ["###"], thinking: { type: "enabled", budget_tokens: 2048 } });
    expect(msg.content).toEqual([{ type: "thinking", thinking: "Let me think.", signature: "" }, { type: "text", text: "Answer" }] as Anthropic.ContentBlock[]);
    expect(msg).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "###" });
    expect(scripted.requests[0]!.reasoning_effort).toBe("low");

    scripted.script({ content: "Cut o", finishReason: "length" });
    expect((await scriptedClient.messages.create(ask)).stop_reason).toBe("max_tokens");
  });

  test("turbo id is billed at 1.5x and reports the priority tier", async () => {
    let msg!: Anthropic.Message;
    const units = await charged(async () => {
      msg = await client.messages.create({ ...ask, model: MODEL + "-turbo" });
    });
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length, true));
    expect(msg.model).toBe(MODEL + "-turbo");
    expect(msg.usage.service_tier).toBe("priority");
  });
});

describe("messages.stream", () => {
  test("text: the SDK assembles the message; usage and cost arrive in message_delta", async () => {
    let text = "";
    let final!: Anthropic.Message;
    let delta: Anthropic.MessageDeltaEvent | undefined;
    const units = await charged(async () => {
      const stream = client.messages.stream(ask);
      stream.on("text", (t) => (text += t));
      stream.on("streamEvent", (e) => {
        if (e.type === "message_delta") delta = e;
      });
      final = await stream.finalMessage();
    });
    const expected = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    expect(units).toBe(expected);
    expect(text).toBe(WORDS.join(""));
    expect(final.content).toEqual([{ type: "text", text: WORDS.join("") } as Anthropic.TextBlock]);
    expect(final.stop_reason).toBe("end_turn");
    expect(final.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: WORDS.length });
    // The SDK keeps only the counters it knows; our cost rides on the message_delta event.
    expect((delta!.usage as unknown as { cost: number }).cost).toBe(Number(unitsToUsd(expected)));
  });

  test("wire format: every frame has an event: name equal to its type, in Anthropic's order", async () => {
    const res = await fetch(h.base + "/v1/messages", {
      method: "POST",
      headers: { "x-api-key": acct.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ ...ask, stream: true }),
    });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = new SseParser().push(await res.text());
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(["message_start", "ping", "content_block_start"]);
    expect(names.filter((n) => n === "content_block_delta").length).toBe(WORDS.length);
    expect(names.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
  });

  test("tool use: input_json_delta assembles the tool input", async () => {
    fake.behave({ toolCall: { name: "get_weather", arguments: '{"city":"Paris"}' } });
    let json = "";
    const stream = client.messages.stream({ ...ask, tools: [weatherTool] });
    stream.on("inputJson", (delta) => (json += delta));
    const final = await stream.finalMessage();
    expect(json).toBe('{"city":"Paris"}');
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content).toHaveLength(1);
    expect(final.content[0]).toMatchObject({ type: "tool_use", name: "get_weather", input: { city: "Paris" } });
    expect((final.content[0] as Anthropic.ToolUseBlock).id).toMatch(/^toolu_/);
  });

  test("parallel tool calls with interleaved argument deltas arrive as separate, complete tool_use blocks", async () => {
    scripted.script({ toolCalls: [{ name: "a", arguments: '{"city":"Paris","unit":"c"}' }, { name: "b", arguments: '{"city":"Rome","days":3}' }], interleaveToolCalls: true });
    const stream = scriptedClient.messages.stream(ask);
    const stopped: unknown[] = [];
    stream.on("contentBlock", (block) => stopped.push((block as Anthropic.ToolUseBlock).input));
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe("tool_use");
    expect(final.content.map((b) => (b as Anthropic.ToolUseBlock).name)).toEqual(["a", "b"]);
    expect(final.content.map((b) => (b as Anthropic.ToolUseBlock).input)).toEqual([{ city: "Paris", unit: "c" }, { city: "Rome", days: 3 }]);
    expect(stopped).toEqual([{ city: "Paris", unit: "c" }, { city: "Rome", days: 3 }]);
  });

  test("thinking deltas stream as a thinking block before the text", async () => {
    scripted.script({ reasoning: "Step one, step two.", content: "Done." });
    let thinking = "";
    const stream = scriptedClient.messages.stream(ask);
    stream.on("thinking", (d) => (thinking += d));
    const final = await stream.finalMessage();
    expect(thinking).toBe("Step one, step two.");
    expect(final.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    expect(final.usage.output_tokens).toBe(7);
  });

  test("a client that goes away mid-stream pays for input plus what was delivered, and the upstream is stopped", async () => {
    fake.behave({ chunkDelayMs: 60 });
    const before = ledgerState(h, acct.id);
    const stream = client.messages.stream(ask);
    const ended = stream.finalMessage().catch((e) => e);
    await new Promise<void>((resolve) => stream.on("text", () => resolve()));
    stream.abort();
    expect(await ended).toBeInstanceOf(Anthropic.APIUserAbortError);
    const after = await settled(h, acct.id);
    expect(after.pendingHolds).toBe(0);
    const paid = before.balance - after.balance;
    expect(paid).toBeGreaterThan(0);
    expect(paid).toBeLessThan(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length));
    expect(fake.aborted).toBeGreaterThan(0);
  });

  test("an upstream failure mid-stream becomes an error event and costs nothing", async () => {
    fake.behave({ errorAfterChunks: 2 });
    const err = await rejected(() => client.messages.stream(ask).finalMessage(), 1);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(String(err.message)).toContain("not billed");
  });
});

describe("count_tokens", () => {
  test("counts locally: no upstream call, nothing billed", async () => {
    const before = ledgerState(h, acct.id);
    const r = await client.messages.countTokens({ model: MODEL, system: "Be brief.", messages: ask.messages, tools: [weatherTool] });
    const expected = promptTokenCount(
      [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }],
      [[{ type: "function", function: { name: "get_weather", parameters: weatherTool.input_schema, description: weatherTool.description } }]],
    );
    expect(r.input_tokens).toBe(expected);
    expect(fake.requests.length).toBe(0);
    expect(ledgerState(h, acct.id)).toEqual(before);
  });
});

describe("bad input: Anthropic error shape, nothing billed", () => {
  test("missing max_tokens", async () => {
    const err = await rejected(() => client.messages.create({ model: MODEL, messages: ask.messages } as unknown as Anthropic.MessageCreateParamsNonStreaming));
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(err.error.error.message).toContain("max_tokens");
  });

  test("tool_result without a matching tool_use", async () => {
    const err = await rejected(() =>
      client.messages.create({ ...ask, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_nope", content: "x" }] }] }),
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error.error.message).toContain("toolu_nope");
  });

  test("unknown block type → 400; max_tokens above the ceiling is lowered to it", async () => {
    const bad = await rejected(() => client.messages.create({ ...ask, messages: [{ role: "user", content: [{ type: "bogus" } as never] }] }));
    expect(bad.error.error.message).toContain("messages[0].content[0].type");
    // Claude Code asks for 128,000 output tokens when it believes it talks to an Opus model.
    // Streaming, because the SDK refuses a plain request this large by itself.
    const units = await charged(async () => {
      for await (const _ of await client.messages.create({ ...ask, max_tokens: 128_000, stream: true }));
    });
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length));
    expect(fake.requests.at(-1)!.max_tokens).toBe(32_768);
  });

  test("unknown model → NotFoundError; speech model → wrong endpoint; bad key → AuthenticationError", async () => {
    expect(await rejected(() => client.messages.create({ ...ask, model: "no-such-model" }))).toBeInstanceOf(Anthropic.NotFoundError);
    const wrong = await rejected(() => client.messages.create({ ...ask, model: "voice-82m" }));
    expect(wrong).toBeInstanceOf(Anthropic.BadRequestError);
    expect(wrong.error.error.message).toContain("POST /v1/audio/speech");
    const anon = new Anthropic({ apiKey: "sk-wrong", baseURL: h.base, maxRetries: 0 });
    expect(await rejected(() => anon.messages.create(ask))).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  test("a balance too small for the hold → 402 billing_error, upstream never called", async () => {
    const poor = new Anthropic({ apiKey: (await h.account(0, "poor")).key, baseURL: h.base, maxRetries: 0 });
    const err = await rejected(() => poor.messages.create(ask));
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({ type: "error", error: { type: "billing_error" } });
  });

  test("an upstream error is a 5xx in the Anthropic shape, without upstream details", async () => {
    fake.behave({ failStatus: 500 });
    const err = await rejected(() => client.messages.create(ask), 1);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    expect(err.error.type).toBe("error");
    expect(JSON.stringify(err.error)).not.toContain("fake upstream internal detail");
  });
});
