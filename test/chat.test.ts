/**
 * Chat completions end to end over real HTTP: the official `openai` SDK → Switchyard → a fake
 * OpenAI-compatible upstream. Checks the rewrite (nothing upstream leaks), that usage is always
 * obtained, and that the balance moves by exactly the cost computed from catalog prices.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { startHarness, type Harness } from "./support/harness";
import type { FakeUpstream } from "./support/fake-upstream";
import { startFakeStack, stopFakeStack } from "./support/fake-stack";
import { errorOf } from "./support/sdk-error";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { ledgerState, settled } from "./support/ledger-state";
import { countTextTokens, promptTokenCount } from "../src/tokens/tokens";
import catalog from "../src/catalog/catalog.json" with { type: "json" };

const MODEL = "glm-4.6"; // turbo-capable
const PLAIN_MODEL = "kimi-linear-48b-a3b"; // not turbo-capable
const WORDS = ["Hello", " from", " the", " fake", " upstream", "."];
const PROMPT_TOKENS = 11;
const messages = [{ role: "user" as const, content: "Say hello." }];

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };
let client: OpenAI;

beforeAll(async () => {
  ({ fake, h, acct } = await startFakeStack());
  client = new OpenAI({ apiKey: acct.key, baseURL: h.base + "/v1", maxRetries: 0 });
});
afterAll(() => stopFakeStack(h, fake));
beforeEach(() => {
  fake.behave({});
  fake.requests.length = 0;
});

/** Runs `fn` and returns how many units the balance dropped, after all holds closed. */
async function charged(fn: () => Promise<unknown>): Promise<number> {
  const before = ledgerState(h, acct.id);
  await fn();
  const after = await settled(h, acct.id);
  expect(after.pendingHolds).toBe(0);
  expect(after.reserved).toBe(0);
  // Every unit that left the balance is one ledger entry's worth.
  expect(after.sum - before.sum).toBe(after.balance - before.balance);
  return before.balance - after.balance;
}

function expectNoLeak(obj: unknown) {
  const text = JSON.stringify(obj);
  expect(text).not.toContain("chatcmpl-upstream-secret");
  expect(text).not.toContain("fp_upstream_secret");
  expect(text).not.toContain("system_fingerprint");
  expect(text).not.toContain("127.0.0.1");
}

describe("plain chat completion", () => {
  test("returns the reply with our id and the public model, billed exactly", async () => {
    let completion!: OpenAI.Chat.Completions.ChatCompletion;
    let headers!: Headers;
    const units = await charged(async () => {
      const { data, response } = await client.chat.completions.create({ model: MODEL, messages }).withResponse();
      completion = data;
      headers = response.headers;
    });
    const expected = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    expect(units).toBe(expected);
    expect(completion.choices[0]!.message.content).toBe(WORDS.join(""));
    expect(completion.model).toBe(MODEL);
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.id).toBe("chatcmpl-" + headers.get("x-request-id")!.replace(/^req_/, ""));
    expect(completion.service_tier).toBe("default");
    expect(completion.usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: WORDS.length, total_tokens: PROMPT_TOKENS + WORDS.length });
    expect((completion.usage as unknown as { cost: number }).cost).toBe(Number(unitsToUsd(expected)));
    expect(headers.get("x-request-cost")).toBe(unitsToUsd(expected));
    expectNoLeak(completion);
    // The upstream saw the public id (the default route) and the client's fields.
    expect(fake.requests[0]!.model).toBe(MODEL);
    expect(fake.requests[0]!.messages).toEqual(messages);
  });

  test("one ledger charge entry per request, tied to the request id", async () => {
    const { response } = await client.chat.completions.create({ model: MODEL, messages }).withResponse();
    const rid = response.headers.get("x-request-id")!;
    await settled(h, acct.id);
    const rows = h.db.query("SELECT kind, amount, endpoint, model FROM ledger_entries WHERE request_id = ?").all(rid);
    expect(rows).toEqual([{ kind: "charge", amount: -expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length), endpoint: "/v1/chat/completions", model: MODEL }]);
  });

  test("extra upstream fields never reach the client", async () => {
    fake.behave({ extra: { kv_transfer_params: { host: "10.0.0.7" }, prompt_logprobs: null } });
    const c = await client.chat.completions.create({ model: MODEL, messages });
    expect(JSON.stringify(c)).not.toContain("kv_transfer_params");
    expect(JSON.stringify(c)).not.toContain("prompt_logprobs");
  });

  test("pass-through fields reach the upstream; service_tier does not", async () => {
    await client.chat.completions.create({ model: MODEL, messages, temperature: 0.25, top_p: 0.5, service_tier: "default", max_tokens: 50 });
    expect(fake.requests[0]).toMatchObject({ temperature: 0.25, top_p: 0.5, max_tokens: 50 });
    expect(fake.requests[0]!.service_tier).toBeUndefined();
  });

  test("an upstream that omits usage is still billed, by our own token count", async () => {
    fake.behave({ omitUsage: true });
    let completion!: OpenAI.Chat.Completions.ChatCompletion;
    const units = await charged(async () => {
      completion = await client.chat.completions.create({ model: MODEL, messages });
    });
    const input = promptTokenCount(messages);
    const output = countTextTokens(WORDS.join(""));
    expect(input).toBeGreaterThan(0);
    expect(output).toBeGreaterThan(0);
    expect(units).toBe(expectedChatCost(MODEL, input, output));
    expect(completion.usage).toMatchObject({ prompt_tokens: input, completion_tokens: output });
  });

  test("a slow upstream still completes and bills once", async () => {
    fake.behave({ delayMs: 400 });
    const units = await charged(() => client.chat.completions.create({ model: MODEL, messages }));
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length));
  });

  test("an upstream failure maps to 502, costs nothing and leaks nothing", async () => {
    fake.behave({ failStatus: 500 });
    const before = ledgerState(h, acct.id);
    const err = await client.chat.completions.create({ model: MODEL, messages }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: "api_error", code: "upstream_error" });
    expect(JSON.stringify(err.error)).not.toContain("fake upstream internal detail");
    expect(err.headers.get("x-request-id")).toMatch(/^req_/);
    expect(ledgerState(h, acct.id)).toEqual(before);
  });

  test("an upstream 503 also maps to a 5xx and costs nothing", async () => {
    fake.behave({ failStatus: 503 });
    const before = ledgerState(h, acct.id);
    const err = await client.chat.completions.create({ model: MODEL, messages }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(ledgerState(h, acct.id)).toEqual(before);
  });
});

describe("streamed chat completion", () => {
  async function collect(include?: boolean) {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages,
      stream: true,
      ...(include === undefined ? {} : { stream_options: { include_usage: include } }),
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    return chunks;
  }

  test("with include_usage: chunks rewritten, a final usage chunk with the exact cost", async () => {
    let chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    const units = await charged(async () => {
      chunks = await collect(true);
    });
    const expected = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    expect(units).toBe(expected);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
    expect(text).toBe(WORDS.join(""));
    const ids = new Set(chunks.map((c) => c.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^chatcmpl-/);
    for (const c of chunks) {
      expect(c.model).toBe(MODEL);
      expectNoLeak(c);
    }
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: WORDS.length, total_tokens: PROMPT_TOKENS + WORDS.length });
    expect((last.usage as unknown as { cost: number }).cost).toBe(Number(unitsToUsd(expected)));
    // Only the last chunk carries usage.
    expect(chunks.slice(0, -1).every((c) => !c.usage)).toBe(true);
    expect(fake.requests[0]!.stream_options).toEqual({ include_usage: true });
  });

  test("without stream_options: usage is still requested upstream and billed, but not sent", async () => {
    let chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    const units = await charged(async () => {
      chunks = await collect(undefined);
    });
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length));
    expect(fake.requests[0]!.stream).toBe(true);
    expect(fake.requests[0]!.stream_options.include_usage).toBe(true);
    expect(chunks.every((c) => !c.usage)).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe(WORDS.join(""));
  });

  test("include_usage false: usage still requested upstream, none sent", async () => {
    const chunks = await collect(false);
    expect(fake.requests[0]!.stream_options.include_usage).toBe(true);
    expect(chunks.every((c) => !c.usage)).toBe(true);
  });

  test("the raw stream ends with data: [DONE] and carries x-request-id", async () => {
    const res = await fetch(h.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    const text = await res.text();
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(text).not.toContain("fp_upstream_secret");
  });

  test("a slow, chunk-by-chunk upstream relays every chunk and bills once", async () => {
    fake.behave({ delayMs: 200, chunkDelayMs: 60 });
    let chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    const units = await charged(async () => {
      chunks = await collect(true);
    });
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe(WORDS.join(""));
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length));
  });

  test("an upstream stream without usage is billed by our token count", async () => {
    fake.behave({ omitUsage: true });
    let chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    const units = await charged(async () => {
      chunks = await collect(true);
    });
    const input = promptTokenCount(messages);
    const output = countTextTokens(WORDS.join(""));
    expect(units).toBe(expectedChatCost(MODEL, input, output));
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: input, completion_tokens: output });
  });

  test("an upstream error mid-stream costs nothing", async () => {
    fake.behave({ errorAfterChunks: 3 });
    const units = await charged(async () => {
      const err = await collect(true).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
    });
    expect(units).toBe(0);
  });

  test("an upstream failure before the stream starts maps to 502 and costs nothing", async () => {
    fake.behave({ failStatus: 500 });
    const before = ledgerState(h, acct.id);
    const err = await collect(true).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(502);
    expect(ledgerState(h, acct.id)).toEqual(before);
  });
});

describe("client disconnects", () => {
  test("before any output: nothing is charged and the upstream is cancelled", async () => {
    fake.behave({ delayMs: 400 });
    const before = ledgerState(h, acct.id);
    const ac = new AbortController();
    const p = fetch(h.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages, stream: true }),
      signal: ac.signal,
    }).catch((e) => e);
    await Bun.sleep(100);
    ac.abort();
    await p;
    const after = await settled(h, acct.id, 3_000);
    expect(after.pendingHolds).toBe(0);
    expect(after.balance).toBe(before.balance);
    expect(after.charges).toBe(before.charges);
  });

  test("mid-stream: input plus the output delivered so far is charged, once", async () => {
    fake.behave({ chunkDelayMs: 150 });
    const before = ledgerState(h, acct.id);
    const ac = new AbortController();
    const res = await fetch(h.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages, stream: true }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes('"Hello"')) text += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await reader.cancel().catch(() => {});
    const after = await settled(h, acct.id, 3_000);
    expect(after.pendingHolds).toBe(0);
    expect(after.charges).toBe(before.charges + 1);
    const charged = before.balance - after.balance;
    // At least the input and one word; less than the whole reply.
    expect(charged).toBeGreaterThanOrEqual(expectedChatCost(MODEL, promptTokenCount(messages), 1));
    expect(charged).toBeLessThan(expectedChatCost(MODEL, promptTokenCount(messages), countTextTokens(WORDS.join(""))));
    expect(after.sum - before.sum).toBe(after.balance - before.balance);
  });
});

describe("turbo", () => {
  test("the -turbo id bills exactly 1.5x and echoes the priority tier", async () => {
    let completion!: OpenAI.Chat.Completions.ChatCompletion;
    const units = await charged(async () => {
      completion = await client.chat.completions.create({ model: MODEL + "-turbo", messages });
    });
    const standard = expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length);
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length, true));
    expect(units * 2).toBe(standard * 3); // exact here: the standard cost is even
    expect(completion.model).toBe(MODEL + "-turbo");
    expect(completion.service_tier).toBe("priority");
  });

  test("service_tier priority on a turbo-capable base id bills 1.5x", async () => {
    const units = await charged(() => client.chat.completions.create({ model: MODEL, messages, service_tier: "priority" }));
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length, true));
  });

  test("streamed -turbo bills 1.5x", async () => {
    const units = await charged(async () => {
      const s = await client.chat.completions.create({ model: MODEL + "-turbo", messages, stream: true });
      for await (const _ of s) void _;
    });
    expect(units).toBe(expectedChatCost(MODEL, PROMPT_TOKENS, WORDS.length, true));
  });

  test("priority on a model without turbo is served and billed at the standard rate", async () => {
    let completion!: OpenAI.Chat.Completions.ChatCompletion;
    const units = await charged(async () => {
      completion = await client.chat.completions.create({ model: PLAIN_MODEL, messages, service_tier: "priority" });
    });
    expect(units).toBe(expectedChatCost(PLAIN_MODEL, PROMPT_TOKENS, WORDS.length));
    expect(completion.service_tier).toBe("default");
  });
});

const chatEntries = catalog.models.filter((m) => m.kind === "chat");

describe("models", () => {
  test("models.list() shows every chat model, turbo-capable ones twice", async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    const expected = chatEntries.flatMap((m) => (m.turbo ? [m.id, m.id + "-turbo"] : [m.id]));
    expect(ids.sort()).toEqual(expected.sort());
    expect(chatEntries.length).toBe(15);
    // Speech and embeddings are not live: no engine is loaded in this harness.
    expect(ids).not.toContain("voice-82m");
    expect(ids).not.toContain("embedding-300m");
  });

  test("each entry has the standard fields and its lab; nothing about upstreams", async () => {
    const page = await client.models.list();
    for (const m of page.data) {
      expect(m.object).toBe("model");
      expect(typeof m.created).toBe("number");
      const base = chatEntries.find((e) => e.id === m.id.replace(/-turbo$/, ""))!;
      expect(m.owned_by).toBe(base.owned_by);
    }
    const text = JSON.stringify(page.data);
    expect(text).not.toContain("127.0.0.1");
    expect(text).not.toContain(fake.url);
  });

  test("models.list() needs no key", async () => {
    const anon = new OpenAI({ apiKey: "not-a-key", baseURL: h.base + "/v1", maxRetries: 0 });
    const page = await anon.models.list();
    expect(page.data.length).toBeGreaterThan(15);
    const res = await fetch(h.base + "/v1/models");
    expect(res.status).toBe(200);
  });

  test("models.retrieve returns one entry, the turbo id with turbo prices", async () => {
    const m = await client.models.retrieve(MODEL);
    expect(m).toMatchObject({ id: MODEL, object: "model", owned_by: "Z.ai" });
    const t = (await client.models.retrieve(MODEL + "-turbo")) as unknown as { id: string; pricing: Record<string, string> };
    expect(t.id).toBe(MODEL + "-turbo");
    expect(t.pricing.input_per_million_tokens).toBe("0.9");
    expect(t.pricing.output_per_million_tokens).toBe("3.3");
  });

  test("models.retrieve of an unknown id, or a -turbo of a non-turbo model, is a 404", async () => {
    expect(await errorOf(client.models.retrieve("no-such-model"))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await errorOf(client.models.retrieve(PLAIN_MODEL + "-turbo"))).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe("with no upstream configured", () => {
  let bare: Harness;
  beforeAll(async () => {
    bare = await startHarness();
  });
  afterAll(() => bare.stop());

  test("chat models are not listed and not retrievable", async () => {
    const anon = new OpenAI({ apiKey: "x", baseURL: bare.base + "/v1", maxRetries: 0 });
    const page = await anon.models.list();
    expect(page.data.filter((m) => chatEntries.some((e) => e.id === m.id))).toEqual([]);
    expect(await errorOf(anon.models.retrieve(MODEL))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  test("a chat request answers 503 model_unavailable and costs nothing", async () => {
    const a = await bare.account(1);
    const c = new OpenAI({ apiKey: a.key, baseURL: bare.base + "/v1", maxRetries: 0 });
    const before = ledgerState(bare, a.id);
    const err = await c.chat.completions.create({ model: MODEL, messages }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(503);
    expect(err.error.code).toBe("model_unavailable");
    expect(ledgerState(bare, a.id)).toEqual(before);
  });
});
