/**
 * POST /v1/embeddings end to end over real HTTP, on the tiny ONNX model with EmbeddingGemma's
 * signature and a real tokenizer: shapes, ordering, base64 through the official openai SDK,
 * dimensions, task prompts, token arrays, billing, and every "bad input" case (nothing billed).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { tempModelsDir } from "../support/embedding-fixture";
import { ledgerState } from "../support/ledger-state";
import { pricesOf } from "../support/expected-cost";
import { loadTokenizer } from "../../src/engines/embeddings/engine";
import catalog from "../../src/catalog/catalog.json" with { type: "json" };

let h: Harness;
let modelsDir: string;
let key: string;
let accountId: string;
const tokenizer = () => loadTokenizer(join(modelsDir, "embedding-300m"));

async function embed(body: unknown, k = key) {
  const res = await fetch(h.base + "/v1/embeddings", {
    method: "POST",
    headers: { authorization: `Bearer ${k}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

beforeAll(async () => {
  modelsDir = tempModelsDir();
  h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir });
  ({ key, id: accountId } = await h.account(10));
});
afterAll(async () => {
  await h.stop();
  rmSync(modelsDir, { recursive: true, force: true });
});

describe("POST /v1/embeddings", () => {
  test("the model is listed once its files are loaded", async () => {
    const ids = ((await (await fetch(h.base + "/v1/models")).json()) as any).data.map((m: any) => m.id);
    expect(ids).toContain("embedding-300m");
  });

  test("returns one unit vector per input, in order, with exact usage and cost", async () => {
    const input = ["hello world", "the cat", "hello world", "a dog"];
    const before = ledgerState(h, accountId);
    const r = await embed({ model: "embedding-300m", input });
    expect(r.status).toBe(200);
    expect(r.body.object).toBe("list");
    expect(r.body.model).toBe("embedding-300m");
    expect(r.body.data.map((d: any) => d.index)).toEqual([0, 1, 2, 3]);
    for (const d of r.body.data) {
      expect(d.object).toBe("embedding");
      expect(d.embedding).toHaveLength(768);
      expect(Math.abs(norm(d.embedding) - 1)).toBeLessThan(1e-5);
    }
    expect(r.body.data[0].embedding).toEqual(r.body.data[2].embedding);
    expect(r.body.data[0].embedding).not.toEqual(r.body.data[1].embedding);
    const tok = tokenizer();
    const tokens = input.reduce((n, t) => n + tok.encodeText(t).length, 0);
    expect(r.body.usage.prompt_tokens).toBe(tokens);
    expect(r.body.usage.total_tokens).toBe(tokens);
    const units = Number((BigInt(tokens) * pricesOf("embedding-300m").pIn + 999_999n) / 1_000_000n);
    const after = ledgerState(h, accountId);
    expect(before.balance - after.balance).toBe(units);
    expect(after.charges).toBe(before.charges + 1);
    expect(after.reserved).toBe(0);
    expect(Number(r.headers.get("x-request-cost"))).toBe(units / 1e9);
    expect(r.body.usage.cost).toBe(units / 1e9);
  });

  test("concurrent requests each get their own vectors (ordering under concurrency)", async () => {
    const texts = Array.from({ length: 24 }, (_, i) => `hello ${"x".repeat(i + 1)} world ${i}`);
    const solo = await Promise.all(texts.map(async (t) => (await embed({ model: "embedding-300m", input: t })).body.data[0].embedding));
    const together = await Promise.all(texts.map((t, i) => embed({ model: "embedding-300m", input: [t, texts[(i + 1) % texts.length]] })));
    together.forEach((r, i) => {
      expect(r.status).toBe(200);
      const [a, b] = r.body.data.map((d: any) => d.embedding as number[]);
      const close = (x: number[], y: number[]) => x.every((v, k) => Math.abs(v - y[k]!) < 1e-5);
      expect(close(a, solo[i])).toBe(true);
      expect(close(b, solo[(i + 1) % texts.length])).toBe(true);
    });
  });

  test("the official openai SDK (base64 by default) gets the same float32 values as the float encoding", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: h.base + "/v1" });
    const input = ["hello world", "the cat sat"];
    const sdk = await client.embeddings.create({ model: "embedding-300m", input });
    const floats = await embed({ model: "embedding-300m", input, encoding_format: "float" });
    // The float encoding writes each value's shortest float32 text (float32-text.ts): it reads back as that float32.
    expect(sdk.data.map((d) => d.embedding)).toEqual(floats.body.data.map((d: any) => d.embedding.map(Math.fround)));
    const raw = await embed({ model: "embedding-300m", input, encoding_format: "base64" });
    const bytes = Buffer.from(raw.body.data[1].embedding, "base64");
    expect(bytes.length).toBe(768 * 4);
    expect(bytes.readFloatLE(0)).toBe(Math.fround(floats.body.data[1].embedding[0]));
  });

  test("dimensions truncates and renormalises to unit length", async () => {
    const full = (await embed({ model: "embedding-300m", input: "hello world" })).body.data[0].embedding as number[];
    for (const dims of [1, 64, 256, 767]) {
      const r = await embed({ model: "embedding-300m", input: "hello world", dimensions: dims });
      const v = r.body.data[0].embedding as number[];
      expect(v).toHaveLength(dims);
      expect(Math.abs(norm(v) - 1)).toBeLessThan(1e-5);
      const n = norm(full.slice(0, dims));
      v.forEach((x, i) => expect(Math.abs(x - full[i]! / n)).toBeLessThan(1e-5));
    }
    const b64 = await embed({ model: "embedding-300m", input: "hello world", dimensions: 8, encoding_format: "base64" });
    expect(Buffer.from(b64.body.data[0].embedding, "base64").length).toBe(32);
  });

  test("input_type applies the model card's task prompt (and its tokens are billed)", async () => {
    const plain = await embed({ model: "embedding-300m", input: "the cat" });
    const query = await embed({ model: "embedding-300m", input: "the cat", input_type: "query" });
    const doc = await embed({ model: "embedding-300m", input: "the cat", input_type: "document" });
    const tok = tokenizer();
    expect(query.body.usage.prompt_tokens).toBe(tok.encodeText("task: search result | query: the cat").length);
    expect(doc.body.usage.prompt_tokens).toBe(tok.encodeText("title: none | text: the cat").length);
    expect(query.body.data[0].embedding).not.toEqual(plain.body.data[0].embedding);
    expect(query.body.data[0].embedding).not.toEqual(doc.body.data[0].embedding);
  });

  test("token arrays embed exactly like the text they encode", async () => {
    const tok = tokenizer();
    const ids = tok.encodeText("hello world").slice(1, -1);
    const text = await embed({ model: "embedding-300m", input: "hello world" });
    const one = await embed({ model: "embedding-300m", input: ids });
    const many = await embed({ model: "embedding-300m", input: [ids, ids] });
    expect(one.status).toBe(200);
    expect(one.body.data[0].embedding).toEqual(text.body.data[0].embedding);
    expect(many.body.data).toHaveLength(2);
    expect(one.body.usage.prompt_tokens).toBe(text.body.usage.prompt_tokens);
  });

  test("accepts 2,048 entries and an entry of exactly 2,048 tokens", async () => {
    const r = await embed({ model: "embedding-300m", input: Array.from({ length: 2048 }, (_, i) => `t${i}`) });
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(2048);
    expect(r.body.data[2047].index).toBe(2047);
    const max = await embed({ model: "embedding-300m", input: [Array(2046).fill(300)] });
    expect(max.status).toBe(200);
    expect(max.body.usage.prompt_tokens).toBe(2048);
  });
});

describe("bad input gets a 400 naming the field, and nothing is billed", () => {
  const chatModel = (catalog.models as { id: string; kind: string }[]).find((m) => m.kind === "chat")!.id;
  const cases: { name: string; body: Record<string, unknown>; param: string; code?: string; status?: number }[] = [
    { name: "empty string", body: { input: "" }, param: "input" },
    { name: "empty array", body: { input: [] }, param: "input" },
    { name: "empty string among others", body: { input: ["a", ""] }, param: "input[1]" },
    { name: "more than 2,048 entries", body: { input: Array(2049).fill("a") }, param: "input" },
    { name: "an entry over 2,048 tokens", body: { input: ["ok", "x ".repeat(3000)] }, param: "input[1]", code: "context_length_exceeded" },
    { name: "a single string over 2,048 tokens", body: { input: "x ".repeat(3000) }, param: "input", code: "context_length_exceeded" },
    { name: "a huge string (not even tokenised)", body: { input: ["a", "b", "y".repeat(200_000)] }, param: "input[2]", code: "context_length_exceeded" },
    { name: "a token array over the limit once BOS/EOS are added", body: { input: Array(2047).fill(300) }, param: "input", code: "context_length_exceeded" },
    { name: "a token array among others over the limit", body: { input: [[300], Array(5000).fill(300)] }, param: "input[1]", code: "context_length_exceeded" },
    { name: "an empty token array", body: { input: [[1], []] }, param: "input[1]" },
    { name: "a token id outside the vocabulary", body: { input: [[5, 999_999]] }, param: "input[0][1]" },
    { name: "a negative token id", body: { input: [3, -1] }, param: "input[1]" },
    { name: "a fractional token id", body: { input: [[3, 1.5]] }, param: "input[0][1]" },
    { name: "mixed strings and numbers", body: { input: ["a", 1] }, param: "input[1]" },
    { name: "input of the wrong type", body: { input: { text: "a" } }, param: "input" },
    { name: "input missing", body: {}, param: "input" },
    { name: "dimensions 0", body: { input: "a", dimensions: 0 }, param: "dimensions" },
    { name: "dimensions above 768", body: { input: "a", dimensions: 769 }, param: "dimensions" },
    { name: "dimensions not an integer", body: { input: "a", dimensions: 12.5 }, param: "dimensions" },
    { name: "unknown encoding_format", body: { input: "a", encoding_format: "hex" }, param: "encoding_format" },
    { name: "unknown input_type", body: { input: "a", input_type: "poetry" }, param: "input_type" },
    { name: "a chat model", body: { input: "a", model: chatModel }, param: "model", code: "wrong_endpoint" },
    { name: "a speech model", body: { input: "a", model: "voice-82m" }, param: "model", code: "wrong_endpoint" },
    { name: "an unknown model", body: { input: "a", model: "no-such-model" }, param: "model", code: "model_not_found", status: 404 },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const acct = await h.account(1);
      const r = await embed({ model: "embedding-300m", ...c.body }, acct.key);
      expect(r.status).toBe(c.status ?? 400);
      expect(r.body.error.param).toBe(c.param);
      if (c.code) expect(r.body.error.code).toBe(c.code);
      if (c.code === "wrong_endpoint") expect(r.body.error.message).toContain("POST /");
      expect(r.body.error.message).toContain(c.param === "model" ? "model" : c.param);
      const st = ledgerState(h, acct.id);
      expect(st.charges).toBe(0);
      expect(st.reserved).toBe(0);
      expect(st.pendingHolds).toBe(0);
    });
  }

  test("an account without enough credit gets 402 and no charge", async () => {
    const acct = await h.account("0.000000001");
    const r = await embed({ model: "embedding-300m", input: Array(100).fill("hello world") }, acct.key);
    expect(r.status).toBe(402);
    expect(ledgerState(h, acct.id).charges).toBe(0);
  });
});
