/**
 * ONNX Runtime's Node binding runs a session synchronously on the thread that calls it, so the
 * embedding model runs in a worker thread: the event loop (HTTP, tokenising, other requests)
 * must stay free while a batch is being embedded. Checked without HTTP on a model heavy enough
 * that a batch takes tens of milliseconds; the inline runner is the control that shows the check
 * can tell the difference.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { tempModelsDir } from "../support/embedding-fixture";
import { join } from "node:path";
import { EmbeddingEngine } from "../../src/engines/embeddings/engine";

const modelsDir = tempModelsDir({ layers: 2, denseHead: 4096 });
// No batching wait and room for the whole batch: one model run, started at once.
const BATCHING = { maxWaitMs: 0, maxBatchTokens: 65_536 };
const dir = join(modelsDir, "embedding-300m");
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

/**
 * Runs a heavy batch while a 2 ms interval ticks; returns how long the batch took and the longest
 * stretch the event loop went without a tick (from the batch's start to its end).
 */
async function stall(engine: EmbeddingEngine): Promise<{ runMs: number; longestGapMs: number; ticks: number }> {
  const batch = Array.from({ length: 32 }, (_, i) => engine.tokenizer.encodeText(`the cat sat on the mat number ${i} `.repeat(30)));
  await engine.embed(batch); // warm-up
  const t0 = performance.now();
  let last = t0;
  let longestGapMs = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
    ticks++;
  }, 2);
  await engine.embed(batch);
  const end = performance.now();
  clearInterval(timer);
  longestGapMs = Math.max(longestGapMs, end - last);
  return { runMs: end - t0, longestGapMs, ticks };
}

describe("embedding inference thread", () => {
  test("with the worker, the event loop keeps ticking while a batch is being embedded; vectors match the inline runner", async () => {
    const worker = await EmbeddingEngine.load(dir, "cpu", undefined, BATCHING);
    const inline = await EmbeddingEngine.load(dir, "cpu", undefined, BATCHING, "inline");
    try {
      expect(worker.describe().thread).toBe("worker");
      expect(worker.describe().thread_note).toBeUndefined();
      expect(inline.describe().thread).toBe("main");
      const w = await stall(worker);
      // The loop kept ticking through the batch: no stretch near the batch's whole length.
      expect(w.ticks).toBeGreaterThanOrEqual(3);
      expect(w.longestGapMs).toBeLessThan(w.runMs / 2);
      const seqs = [worker.tokenizer.encodeText("hello world"), worker.tokenizer.encodeText("a much longer sentence than the first one")];
      const a = await worker.embed(seqs);
      const b = await inline.embed(seqs);
      expect(a.map((v) => [...v])).toEqual(b.map((v) => [...v]));
      expect(a[0]!.length).toBe(worker.dimensions);
    } finally {
      await worker.close();
      await inline.close();
    }
  }, 20_000);

  test("control: in the main thread the same batch stalls the event loop", async () => {
    const inline = await EmbeddingEngine.load(dir, "cpu", undefined, BATCHING, "inline");
    try {
      const m = await stall(inline);
      // One stretch covers most of the batch: the run held the loop.
      expect(m.longestGapMs).toBeGreaterThan(m.runMs / 2);
    } finally {
      await inline.close();
    }
  }, 20_000);

  test("after close, the worker refuses work", async () => {
    const engine = await EmbeddingEngine.load(dir, "cpu");
    await engine.close();
    await expect(engine.embed([engine.tokenizer.encodeText("hello")])).rejects.toThrow();
  });
});
