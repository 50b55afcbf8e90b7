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
import { loopTurnsWhile } from "../support/event-loop";

const modelsDir = tempModelsDir({ layers: 2, denseHead: 4096 });
// No batching wait and room for the whole batch: one model run, started at once.
const BATCHING = { maxWaitMs: 0, maxBatchTokens: 65_536 };
const dir = join(modelsDir, "embedding-300m");
/** Event-loop turns that only a loop left free during the batch reaches. */
const MANY_TURNS = 20;
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

/** Runs a heavy batch (after a warm-up) and counts the event-loop turns while it runs (see loopTurnsWhile). */
async function turnsDuring(engine: EmbeddingEngine): Promise<number> {
  const batch = Array.from({ length: 32 }, (_, i) => engine.tokenizer.encodeText(`the cat sat on the mat number ${i} `.repeat(30)));
  await engine.embed(batch); // warm-up
  return (await loopTurnsWhile(() => engine.embed(batch))).turns;
}

describe("embedding inference thread", () => {
  test("with the worker, the event loop keeps ticking while a batch is being embedded; vectors match the inline runner", async () => {
    const worker = await EmbeddingEngine.load(dir, "cpu", undefined, BATCHING);
    const inline = await EmbeddingEngine.load(dir, "cpu", undefined, BATCHING, "inline");
    try {
      expect(worker.describe().thread).toBe("worker");
      expect(worker.describe().thread_note).toBeUndefined();
      expect(inline.describe().thread).toBe("main");
      // The loop kept turning while the batch was in flight.
      const turns = await turnsDuring(worker);
      console.log(`worker: ${turns} event-loop turns during the batch`);
      expect(turns).toBeGreaterThanOrEqual(MANY_TURNS);
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
      // The run held the loop: at most the few turns around the synchronous model run.
      const turns = await turnsDuring(inline);
      console.log(`inline: ${turns} event-loop turns during the batch`);
      expect(turns).toBeLessThan(MANY_TURNS);
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
