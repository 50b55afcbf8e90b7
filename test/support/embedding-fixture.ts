/**
 * Writes a test embedding-300m model directory in the real layout
 * (embedding-300m/onnx/model.onnx, tokenizer.json, tokenizer_config.json), so the real engine
 * loading code runs against it. The model is the tiny ONNX graph with EmbeddingGemma's signature.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTinyEmbeddingModel } from "./onnx-builder";
import { buildTinyTokenizer } from "./tiny-tokenizer";

export interface FixtureOptions {
  /** MatMul+Tanh layers: 0 for fast tests, more for benchmarks where batching should matter. */
  layers?: number;
  /** Dense head width after pooling (see buildTinyEmbeddingModel); 0 for none. */
  denseHead?: number;
}

/** Writes the files into `modelsDir/embedding-300m` and returns that directory. */
export function writeEmbeddingModel(modelsDir: string, opts: FixtureOptions = {}): string {
  const dir = join(modelsDir, "embedding-300m");
  mkdirSync(join(dir, "onnx"), { recursive: true });
  const tok = buildTinyTokenizer();
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tok.json));
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(tok.config));
  writeFileSync(join(dir, "onnx", "model.onnx"), buildTinyEmbeddingModel({ vocabSize: tok.vocabSize, layers: opts.layers ?? 0, denseHead: opts.denseHead ?? 0 }));
  return dir;
}

/** A fresh temporary SWITCHYARD_MODELS_DIR holding the test model. */
export function tempModelsDir(opts: FixtureOptions = {}): string {
  const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-models-"));
  writeEmbeddingModel(modelsDir, opts);
  return modelsDir;
}
