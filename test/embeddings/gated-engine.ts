/**
 * A real embedding engine (real tokenizer, real ONNX session, real scheduler) whose model runs
 * can be held until released, so tests can fill the queue, cancel queued work or observe batching
 * deterministically. Registered in place of the engine the server loaded at start.
 */
import { join } from "node:path";
import { EmbeddingEngine, loadTokenizer, type BatchingOptions, type EmbeddingRunner } from "../../src/engines/embeddings/engine";
import { EmbeddingModel } from "../../src/engines/embeddings/model";
import type { Harness } from "../support/harness";

export interface GatedEngine {
  engine: EmbeddingEngine;
  /** Batches that reached the model so far (their sizes). */
  runs: number[];
  hold(): void;
  release(): void;
}

export async function installGatedEngine(h: Harness, modelsDir: string, batching: Partial<BatchingOptions>): Promise<GatedEngine> {
  const dir = join(modelsDir, "embedding-300m");
  const tokenizer = loadTokenizer(dir);
  const real = await EmbeddingModel.load(join(dir, "onnx", "model.onnx"), "cpu", tokenizer.padId);
  let gate: Promise<void> | null = null;
  let open: () => void = () => {};
  const runs: number[] = [];
  const gated: EmbeddingRunner = {
    info: real.info,
    async embed(batch) {
      runs.push(batch.length);
      if (gate) await gate;
      return real.embed(batch);
    },
    close: () => real.close(),
  };
  const s = h.server.services;
  const engine = new EmbeddingEngine(dir, tokenizer, gated, { maxBatchSize: 32, maxBatchTokens: 8192, maxWaitMs: 0, maxQueue: 64, ...batching }, s.metrics);
  await s.engines.get<EmbeddingEngine>("embedding-300m")?.close();
  s.engines.register(engine);
  return {
    engine,
    runs,
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      gate = null;
      open();
    },
  };
}

export async function until(cond: () => boolean, timeoutMs = 3_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}
