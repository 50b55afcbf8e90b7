/**
 * Cached input billed at the cached price (docs/money.md, "Cached input"), end to end over real
 * HTTP with the official SDKs, on both stores: an engine reports 10,000 prompt tokens of which
 * 8,000 were read from its prompt cache, and 100 completion tokens, in each engine shape (OpenAI's
 * prompt_tokens_details, DeepSeek's hit/miss, Anthropic-style cache_read_input_tokens), for a model
 * priced 1.00 / 2.00 USD per million input / output and 0.10 per million cached input. Through chat
 * completions, Messages and Responses, plain and streamed, each request is charged exactly 0.003
 * USD (0.0102 before: every cached token at the input price), shows its cached tokens where that
 * protocol's clients read them, records them on its ledger entry with what the cache saved, and
 * appears in /v1/usage. Cache writes (OpenRouter's shape) are charged at the write price and shown
 * as writes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { dashboardSession } from "./support/dashboard-session";
import { startScriptedUpstream, type ScriptedUpstream } from "./support/scripted-upstream";
import { describeEachStore } from "./support/stores";
import { settled } from "./support/ledger-state";

const CATALOG = JSON.stringify({
  replace: true,
  models: [
    { id: "agent-model", kind: "chat", owned_by: "lab", context_window: 200_000, pricing: { input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10" } },
    {
      id: "writer-model", kind: "chat", owned_by: "lab", context_window: 200_000,
      pricing: { input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10", cache_write_per_million: "1.25" },
    },
  ],
});

/** An agent's long system prompt: its bound (UTF-8 bytes) covers the 10,000 tokens the engine reports. */
const SYSTEM = "You are a coding agent. Follow the repository's conventions. ".repeat(200);

const SHAPES: [shape: string, usage: Record<string, unknown>][] = [
  ["OpenAI prompt_tokens_details (vLLM, SGLang, OpenRouter)", { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_tokens_details: { cached_tokens: 8_000 } }],
  ["DeepSeek prompt_cache_hit_tokens", { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_cache_hit_tokens: 8_000, prompt_cache_miss_tokens: 2_000 }],
  ["Anthropic-style cache_read_input_tokens", { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, cache_read_input_tokens: 8_000, cache_creation_input_tokens: 0 }],
];

/** OpenRouter's shape with writes: 500 uncached, 8,000 read, 1,500 written. */
const WRITES = { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_tokens_details: { cached_tokens: 8_000, cache_write_tokens: 1_500 } };

type Protocol = "chat" | "messages" | "responses";

/** What one call through a protocol shows its client: the prompt's cache counts as that client reads them. */
interface Shown {
  /** The whole prompt as the protocol counts it (Messages: input_tokens + cache reads + writes). */
  prompt: number;
  cached: number;
  written: number;
  /** usage.cost, where the protocol's client sees it. */
  cost: number | undefined;
  /** x-request-cost, for plain calls. */
  header: string | null;
}

async function call(base: string, key: string, protocol: Protocol, stream: boolean, model: string): Promise<Shown> {
  if (protocol === "chat") {
    const client = new OpenAI({ apiKey: key, baseURL: base + "/v1", maxRetries: 0 });
    const messages = [{ role: "system" as const, content: SYSTEM }, { role: "user" as const, content: "Fix the failing test." }];
    if (!stream) {
      const { data, response } = await client.chat.completions.create({ model, messages, max_tokens: 200 }).withResponse();
      const u = data.usage as OpenAI.CompletionUsage & { cost: number; prompt_tokens_details: { cache_write_tokens?: number } };
      return { prompt: u.prompt_tokens, cached: u.prompt_tokens_details!.cached_tokens!, written: u.prompt_tokens_details.cache_write_tokens ?? 0, cost: u.cost, header: response.headers.get("x-request-cost") };
    }
    let usage: (OpenAI.CompletionUsage & { cost: number; prompt_tokens_details: { cache_write_tokens?: number } }) | undefined;
    for await (const chunk of await client.chat.completions.create({ model, messages, max_tokens: 200, stream: true, stream_options: { include_usage: true } })) {
      if (chunk.usage) usage = chunk.usage as typeof usage;
    }
    return { prompt: usage!.prompt_tokens, cached: usage!.prompt_tokens_details!.cached_tokens!, written: usage!.prompt_tokens_details.cache_write_tokens ?? 0, cost: usage!.cost, header: null };
  }
  if (protocol === "messages") {
    const client = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
    // As Claude Code sends it: the system prompt marked as a cache breakpoint.
    const params = { model, max_tokens: 200, system: [{ type: "text" as const, text: SYSTEM, cache_control: { type: "ephemeral" as const } }], messages: [{ role: "user" as const, content: "Fix the failing test." }] };
    const shown = (u: Anthropic.Usage, header: string | null): Shown => ({
      prompt: u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
      cached: u.cache_read_input_tokens ?? 0, written: u.cache_creation_input_tokens ?? 0, cost: (u as unknown as { cost?: number }).cost, header,
    });
    if (!stream) {
      const { data, response } = await client.messages.create(params).withResponse();
      return shown(data.usage, response.headers.get("x-request-cost"));
    }
    // The SDK builds the final message from message_start and message_delta, as Claude Code reads it.
    return shown((await client.messages.stream(params).finalMessage()).usage, null);
  }
  const client = new OpenAI({ apiKey: key, baseURL: base + "/v1", maxRetries: 0 });
  const params = { model, instructions: SYSTEM, input: "Fix the failing test.", max_output_tokens: 200 };
  const shown = (u: OpenAI.Responses.ResponseUsage, header: string | null): Shown => ({
    prompt: u.input_tokens, cached: u.input_tokens_details.cached_tokens,
    written: (u.input_tokens_details as { cache_write_tokens?: number }).cache_write_tokens ?? 0, cost: (u as unknown as { cost: number }).cost, header,
  });
  if (!stream) {
    const { data, response } = await client.responses.create(params).withResponse();
    return shown(data.usage!, response.headers.get("x-request-cost"));
  }
  return shown((await client.responses.stream(params).finalResponse()).usage!, null);
}

const CALLS: [Protocol, boolean][] = [["chat", false], ["chat", true], ["messages", false], ["messages", true], ["responses", false], ["responses", true]];

describeEachStore("cached input billed at the cached price", (store) => {
  let scripted: ScriptedUpstream;
  let h: Harness;

  beforeAll(async () => {
    scripted = startScriptedUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: scripted.url, SWITCHYARD_CATALOG: CATALOG }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    scripted?.stop();
  });

  const usageReport = async (key: string) => (await (await fetch(h.base + "/v1/usage?group_by=model", { headers: { authorization: `Bearer ${key}` } })).json()) as any;

  for (const [shape, usage] of SHAPES) {
    describe(shape, () => {
      test.each(CALLS)("%s (streamed: %p): charged 0.003 USD, cached tokens shown, recorded and in /v1/usage", async (protocol, stream) => {
        scripted.script({ content: "Fixed: the test now passes.", usage });
        const acct = await h.account(1);
        const shown = await call(h.base, acct.key, protocol, stream, "agent-model");
        expect(shown).toMatchObject({ prompt: 10_000, cached: 8_000, written: 0 });
        // The stream's cost is in its final event (chat, Responses); the Anthropic SDK's final
        // message keeps only the token counts, so the ledger below is the check there.
        if (shown.cost !== undefined) expect(shown.cost).toBe(0.003);
        if (!stream) expect(shown.header).toBe("0.003");

        await settled(h, acct.id);
        const charges = await h.probe.charges(acct.id);
        expect(charges).toHaveLength(1);
        // 2,000 uncached × 1.00 + 8,000 cached × 0.10 + 100 out × 2.00 = 0.003; all at the input price it was 0.0102.
        expect(charges[0]).toMatchObject({ amount: -3_000_000, input_tokens: 10_000, output_tokens: 100, cached_tokens: 8_000, cache_write_tokens: 0, cache_saved: 7_200_000 });
        expect(charges[0]!.reason).toBe("price per 1M USD: input 1, cached input 0.1, output 2");

        const report = await usageReport(acct.key);
        expect(report.totals).toEqual({ requests: 1, input_tokens: 10_000, cached_input_tokens: 8_000, cache_write_tokens: 0, output_tokens: 100, characters: 0, cost: 0.003 });
        expect(report.rows).toEqual([{ model: "agent-model", ...report.totals }]);
      });
    });
  }

  describe("cache writes (OpenRouter's prompt_tokens_details.cache_write_tokens) at the write price", () => {
    test.each(CALLS)("%s (streamed: %p): charged 0.003375 USD, writes shown as writes", async (protocol, stream) => {
      scripted.script({ content: "Done.", usage: WRITES });
      const acct = await h.account(1);
      const shown = await call(h.base, acct.key, protocol, stream, "writer-model");
      // Chat completions reports writes in OpenRouter's field; Messages as cache_creation_input_tokens; Responses as cache_write_tokens.
      expect(shown).toMatchObject({ prompt: 10_000, cached: 8_000, written: 1_500 });
      if (!stream) expect(shown.header).toBe("0.003375");
      await settled(h, acct.id);
      // 500 × 1.00 + 8,000 × 0.10 + 1,500 × 1.25 + 100 × 2.00 µUSD; all at the input price, 0.0102.
      expect((await h.probe.charges(acct.id))[0]).toMatchObject({ amount: -3_375_000, cached_tokens: 8_000, cache_write_tokens: 1_500, cache_saved: 6_825_000 });
      expect((await usageReport(acct.key)).totals).toMatchObject({ cached_input_tokens: 8_000, cache_write_tokens: 1_500, cost: 0.003375 });
    });
  });

  test("GET /v1/generation, the admin ledger and the operator's request log (and CSV) show the cached tokens and what the cache saved", async () => {
    scripted.script({ content: "ok", usage: SHAPES[0]![1] });
    const acct = await h.account(1);
    const res = await fetch(h.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "agent-model", max_tokens: 200, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-request-id")!;
    await settled(h, acct.id);
    const generation = (await (await fetch(`${h.base}/v1/generation?id=${id}`, { headers: { authorization: `Bearer ${acct.key}` } })).json()) as any;
    expect(generation.data).toMatchObject({ tokens_prompt: 10_000, native_tokens_cached: 8_000, native_tokens_cache_write: 0, total_cost: 0.003, cache_discount: 0.0072 });
    const page = await h.admin("GET", `/admin/accounts/${acct.id}/ledger`);
    expect(page.body.data.find((e: any) => e.kind === "charge")).toMatchObject({ cached_tokens: 8_000, cache_write_tokens: 0, cache_saved: 0.0072 });

    // The operator's request log and its CSV: outcomes are written in batches, so the row comes within a few seconds.
    const op = await dashboardSession(h, "operator", ADMIN_TOKEN);
    let row: any;
    for (let i = 0; i < 200 && !row; i++) {
      row = ((await (await op.call("GET", `/operator/requests?account=${acct.id}`)).json()) as any).data.find((r: any) => r.id === id);
      if (!row) await Bun.sleep(50);
    }
    expect(row).toMatchObject({ tokens_prompt: 10_000, tokens_cached: 8_000, tokens_cache_write: 0, total_cost: 0.003, cache_saved: 0.0072 });
    const csv = (await (await op.call("GET", `/operator/requests.csv?account=${acct.id}`)).text()).trimEnd().split("\r\n");
    expect(csv[1]!.split(",").slice(13)).toEqual(["0.003", "8000", "0", "0.0072"]);
  });

  test("the admin API writes cache prices (numbers or decimal strings), names a bad one, and requests use them at once", async () => {
    const created = await h.admin("POST", "/admin/models", {
      id: "admin-cached", kind: "chat", owned_by: "lab", context_window: 200_000,
      pricing: { input_per_million: 1, output_per_million: "2.00", cached_input_per_million: 0.2 },
    });
    expect(created.status).toBe(201);
    expect(created.body.pricing).toEqual({ input_per_million: 1, output_per_million: 2, cached_input_per_million: 0.2 });
    for (const [pricing, field] of [[{ cached_input_per_million: -0.1 }, "pricing.cached_input_per_million"], [{ cache_write_per_million: "free" }, "pricing.cache_write_per_million"]] as const) {
      const bad = await h.admin("PATCH", "/admin/models/admin-cached", { pricing });
      expect(bad.status).toBe(400);
      expect(bad.body.error.param).toBe(field);
    }
    // PATCH merges per price: the cached price changes, the others stay.
    expect((await h.admin("PATCH", "/admin/models/admin-cached", { pricing: { cached_input_per_million: "0.10" } })).body.pricing)
      .toEqual({ input_per_million: 1, output_per_million: 2, cached_input_per_million: 0.1 });
    scripted.script({ content: "ok", usage: SHAPES[0]![1] });
    const acct = await h.account(1);
    expect((await call(h.base, acct.key, "chat", false, "admin-cached")).header).toBe("0.003");
    expect((await h.admin("DELETE", "/admin/models/admin-cached")).status).toBe(200);
  });

  test("the hold covers every prompt token at the write price, so an all-written prompt is charged in full, never clamped", async () => {
    scripted.script({ content: "ok", usage: { prompt_tokens: 10_000, completion_tokens: 100, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 10_000 } } });
    const acct = await h.account(1);
    const shown = await call(h.base, acct.key, "chat", false, "writer-model");
    // 10,000 × 1.25 + 100 × 2.00 µUSD: more than the input price would have held.
    expect(shown.header).toBe("0.0127");
    await settled(h, acct.id);
    const [charge] = await h.probe.charges(acct.id);
    expect(charge).toMatchObject({ amount: -12_700_000, cache_write_tokens: 10_000, cache_saved: -2_500_000 });
    expect(charge!.reason).not.toContain("clamped");
  });
});
