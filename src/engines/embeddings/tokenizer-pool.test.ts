import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { tempModelsDir } from "../../../test/support/embedding-fixture";
import { loadTokenizer, type EmbeddingTokenizer } from "./tokenizer";
import { TokenizerPool } from "./tokenizer-pool";
import { parseEmbeddingInput, type SequenceEncoder } from "./input";
import { EmbeddingEngine } from "./engine";
import { encodeEmbedding } from "./vectors";

const modelsDir = tempModelsDir();
const dir = join(modelsDir, "embedding-300m");
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

const texts = ["hello world", "the cat", "a query about search results", "dog"];

/** The main-thread tokenizer with a counter on encodeText: what runs on the event loop. */
function counted(): { tok: EmbeddingTokenizer; calls: () => number } {
  const tok = loadTokenizer(dir);
  let n = 0;
  const real = tok.encodeText.bind(tok);
  tok.encodeText = (t, i) => (n++, real(t, i));
  return { tok, calls: () => n };
}

test("texts are tokenised in the tokenizer threads, with the same ids as in the main thread", async () => {
  const { tok, calls } = counted();
  const pool = await TokenizerPool.start(dir, tok, 2);
  try {
    expect(pool.size).toBe(2);
    const want = texts.map((t) => tok.encodeText(t, "query"));
    const before = calls();
    expect(await pool.encodeTexts(texts, "query")).toEqual(want);
    expect(await pool.encodeTexts(texts)).toEqual(texts.map((t) => loadTokenizer(dir).encodeText(t)));
    // None of it ran on this thread.
    expect(calls()).toBe(before);
  } finally {
    pool.close();
  }
});

test("when a thread dies, its texts and later ones are tokenised here, with the same ids", async () => {
  const { tok, calls } = counted();
  const pool = await TokenizerPool.start(dir, tok, 1);
  // Reach the thread to end it as a crash would.
  const thread = (pool as unknown as { threads: { worker: Worker }[] }).threads[0]!;
  const pending = pool.encodeTexts(texts);
  thread.worker.terminate();
  const want = texts.map((t) => loadTokenizer(dir).encodeText(t));
  expect(await pending).toEqual(want);
  // The close event may come after the reply: either way the ids are right.
  await new Promise((r) => setTimeout(r, 50));
  expect(pool.size).toBe(0);
  const before = calls();
  expect(await pool.encodeTexts(texts)).toEqual(want);
  expect(calls()).toBe(before + texts.length);
  pool.close();
});

test("a tokenizer that cannot load in the threads leaves the pool empty: texts are tokenised here", async () => {
  const tok = loadTokenizer(dir);
  const pool = await TokenizerPool.start(join(modelsDir, "nowhere"), tok, 2);
  expect(pool.size).toBe(0);
  expect(await pool.encodeTexts(["hello"])).toEqual([tok.encodeText("hello")]);
  pool.close();
});

test("parsing through the threads gives the same sequences, tokens and first error as parsing here", async () => {
  const tok = loadTokenizer(dir);
  const pool = await TokenizerPool.start(dir, tok, 1);
  const here: SequenceEncoder = tok;
  const there: SequenceEncoder = { vocabSize: tok.vocabSize, maxPieceChars: tok.maxPieceChars, encodeText: () => { throw new Error("tokenised in the main thread"); }, wrapIds: (ids, t) => tok.wrapIds(ids, t), encodeTexts: (t, i) => pool.encodeTexts(t, i) };
  try {
    for (const input of ["hello world", texts, [[5, 6, 7], [8]]]) {
      expect(await parseEmbeddingInput(input, there, 64, "document")).toEqual(await parseEmbeddingInput(input, here, 64, "document"));
    }
    // input[1] is exactly too long after tokenising; input[2] is hopeless before: input[1] is reported.
    const long = Array.from({ length: 40 }, () => "hello").join(" ");
    const bad = ["ok", long, "x".repeat(64 * tok.maxPieceChars + 1)];
    const a = await parseEmbeddingInput(bad, here, 32).catch((e) => e);
    const b = await parseEmbeddingInput(bad, there, 32).catch((e) => e);
    expect(a.param).toBe("input[1]");
    expect(b.param).toBe(a.param);
    expect(b.message).toBe(a.message);
  } finally {
    pool.close();
  }
});

test("the engine hands the route an encoder backed by its threads, and closes them", async () => {
  const engine = await EmbeddingEngine.load(dir, "cpu", undefined, {}, "worker", undefined, 1);
  expect(engine.describe().tokenizer_threads).toBe(1);
  expect(engine.encoder.encodeTexts).toBeDefined();
  const parsed = await parseEmbeddingInput(["hello world"], engine.encoder, 2048);
  expect(parsed.sequences).toEqual([engine.tokenizer.encodeText("hello world")]);
  await engine.close();
  const plain = await EmbeddingEngine.load(dir, "cpu");
  expect(plain.describe().tokenizer_threads).toBe(0);
  expect(plain.encoder.encodeTexts).toBeUndefined();
  await plain.close();
});

test("vectors' JSON text is written in the threads: the vectors are moved there and the text equals this thread's", async () => {
  const pool = await TokenizerPool.start(dir, loadTokenizer(dir), 1);
  try {
    const make = () => [0, 1, 2].map((k) => new Float32Array(768).map((_, i) => Math.sin(i * 0.1 + k) / 30));
    for (const encoding of [{ dims: 768, format: "float" as const }, { dims: 256, format: "base64" as const }]) {
      const want = make().map((v) => encodeEmbedding(v, encoding));
      const sent = make();
      const got = await pool.writeVectors(sent, encoding);
      expect(got).toEqual(want);
      // Moved, not copied: this thread no longer holds them, so it did not write the text.
      expect(sent.every((v) => v.buffer.byteLength === 0)).toBe(true);
    }
    expect(Float32Array.from(JSON.parse((await pool.writeVectors(make(), { dims: 768, format: "float" }))[0]!))).toEqual(make()[0]!);
    // Views of one shared buffer (a batch's output) are copied, not moved: the buffer stays whole for the others.
    const shared = new Float32Array(3 * 768);
    make().forEach((v, k) => shared.set(v, k * 768));
    const views = [0, 1, 2].map((k) => shared.subarray(k * 768, (k + 1) * 768));
    expect(await pool.writeVectors(views.slice(0, 2), { dims: 768, format: "float" })).toEqual(make().slice(0, 2).map((v) => encodeEmbedding(v, { dims: 768, format: "float" })));
    expect(shared.byteLength).toBe(3 * 768 * 4);
    expect(views[2]).toEqual(make()[2]!);
  } finally {
    pool.close();
  }
});

test("the engine answers embedEncoded with the same text whether the threads or this thread write it", async () => {
  const threaded = await EmbeddingEngine.load(dir, "cpu", undefined, {}, "worker", undefined, 1);
  const plain = await EmbeddingEngine.load(dir, "cpu");
  try {
    const seqs = [threaded.tokenizer.encodeText("hello world"), threaded.tokenizer.encodeText("the cat")];
    for (const encoding of [{ dims: 768, format: "float" as const }, { dims: 64, format: "base64" as const }, { dims: 32, format: "float" as const }]) {
      const want = (await plain.embed(seqs)).map((v) => encodeEmbedding(v, encoding));
      expect(await threaded.embedEncoded(seqs, encoding)).toEqual(want);
      expect(await plain.embedEncoded(seqs, encoding)).toEqual(want);
    }
  } finally {
    await threaded.close();
    await plain.close();
  }
});

test("the engine keeps a small request's work in this thread and hands a large one's to its threads", async () => {
  const engine = await EmbeddingEngine.load(dir, "cpu", undefined, {}, "worker", undefined, 1, { textChars: 100, floatValues: 2 * 768 });
  try {
    let here = 0;
    const real = engine.tokenizer.encodeText.bind(engine.tokenizer);
    engine.tokenizer.encodeText = (t, i) => (here++, real(t, i));
    const small = ["hello world", "the cat"];
    const large = Array.from({ length: 4 }, (_, i) => `${"search result text title ".repeat(2)}${i}`);
    const want = (texts: string[]) => texts.map((t) => loadTokenizer(dir).encodeText(t));
    expect((await parseEmbeddingInput(small, engine.encoder, 2048)).sequences).toEqual(want(small));
    expect(here).toBe(small.length);
    expect((await parseEmbeddingInput(large, engine.encoder, 2048)).sequences).toEqual(want(large));
    expect(here).toBe(small.length);
    // Floats: two vectors are written here, three are handed to the thread; the text is the same.
    const pool = (engine as unknown as { pool: TokenizerPool }).pool;
    let handed = 0;
    const write = pool.writeVectors.bind(pool);
    pool.writeVectors = (v, e) => (handed++, write(v, e));
    const float = { dims: 768, format: "float" as const };
    const seqs = large.map((t) => real(t));
    for (const n of [2, 3]) {
      const want = (await engine.embed(seqs.slice(0, n))).map((v) => encodeEmbedding(v, float));
      expect(await engine.embedEncoded(seqs.slice(0, n), float)).toEqual(want);
      expect(handed).toBe(n === 2 ? 0 : 1);
    }
    // base64 is always written here.
    await engine.embedEncoded(seqs, { dims: 768, format: "base64" });
    expect(handed).toBe(1);
  } finally {
    await engine.close();
  }
});
