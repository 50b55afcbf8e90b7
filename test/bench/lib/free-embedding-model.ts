/**
 * An embedding-300m folder that costs the server nothing to run: the real model's tokenizer and
 * configuration files with a graph of five cheap nodes that has EmbeddingGemma's inputs and
 * outputs (input_ids, attention_mask int64 [batch, seq] → token_embeddings [batch, seq, 768],
 * sentence_embedding [batch, 768]: the mean of the masked ids times a fixed row). What the server
 * does per request around such a model is what a GPU cannot take off it: HTTP, JSON, tokenising,
 * batching, writing the vectors, billing. The graph is the one of ../shared/gpu-check's
 * free_egemma.py, built here in TypeScript so no Python is needed.
 */
import { cpSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildOnnxModel, onnxType } from "../../support/onnx-builder";

export const FREE_DIMS = 768;

export function buildFreeEmbeddingModel(): Uint8Array {
  const w = Float32Array.from({ length: FREE_DIMS }, (_, i) => 0.5 + i / (FREE_DIMS - 1));
  return buildOnnxModel({
    name: "free-embedding",
    opset: 18,
    inputs: [
      { name: "input_ids", type: "int64", dims: ["batch_size", "sequence_length"] },
      { name: "attention_mask", type: "int64", dims: ["batch_size", "sequence_length"] },
    ],
    outputs: [
      { name: "token_embeddings", type: "float32", dims: ["batch_size", "sequence_length", FREE_DIMS] },
      { name: "sentence_embedding", type: "float32", dims: ["batch_size", FREE_DIMS] },
    ],
    initializers: [
      { name: "w", type: "float32", dims: [1, 1, FREE_DIMS], data: w },
      { name: "ax2", type: "int64", dims: [1], data: [2] },
      { name: "ax1", type: "int64", dims: [1], data: [1] },
    ],
    nodes: [
      { op: "Mul", inputs: ["input_ids", "attention_mask"], outputs: ["m"] },
      { op: "Cast", inputs: ["m"], outputs: ["f"], attrs: { to: onnxType("float32") } },
      { op: "Unsqueeze", inputs: ["f", "ax2"], outputs: ["f3"] },
      { op: "Mul", inputs: ["f3", "w"], outputs: ["token_embeddings"] },
      { op: "ReduceMean", inputs: ["token_embeddings", "ax1"], outputs: ["sentence_embedding"], attrs: { keepdims: 0 } },
    ],
  });
}

/** Weights and graphs of the real folder are not copied. */
const WEIGHTS = /\.(onnx|onnx_data|safetensors|bin|pt)$/;

/**
 * Writes `modelsDir/embedding-300m` with the files of `realDir` (tokenizer.json,
 * tokenizer_config.json, the configs) and the free graph; returns that folder.
 */
export function writeFreeEmbeddingModel(realDir: string, modelsDir: string): string {
  const dir = join(modelsDir, "embedding-300m");
  mkdirSync(join(dir, "onnx"), { recursive: true });
  for (const entry of readdirSync(realDir, { withFileTypes: true })) {
    if (entry.isFile() && !WEIGHTS.test(entry.name)) cpSync(join(realDir, entry.name), join(dir, entry.name));
  }
  writeFileSync(join(dir, "onnx", "model.onnx"), buildFreeEmbeddingModel());
  return dir;
}
