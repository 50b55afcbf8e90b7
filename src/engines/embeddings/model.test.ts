import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildOnnxModel } from "../../../test/support/onnx-builder";
import { EmbeddingModel } from "./model";

const tmp = mkdtempSync(join(tmpdir(), "switchyard-model-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const WIDTH = 6;

/**
 * A model that shows what it was fed: row r of sentence_embedding holds, for each of the first
 * WIDTH positions, input_id + 1000 × attention_mask (0 past the batch's longest sequence).
 */
function feedEchoModel(idType: "int64" | "int32"): string {
  const bytes = buildOnnxModel({
    inputs: [
      { name: "input_ids", type: idType, dims: ["b", "s"] },
      { name: "attention_mask", type: idType, dims: ["b", "s"] },
    ],
    outputs: [{ name: "sentence_embedding", type: "float32", dims: ["b", WIDTH] }],
    initializers: [
      { name: "thousand", type: "float32", dims: [], data: [1000] },
      { name: "zeros", type: "float32", dims: [1, WIDTH], data: new Array(WIDTH).fill(0) },
      { name: "zero", type: "int64", dims: [1], data: [0] },
      { name: "width", type: "int64", dims: [1], data: [WIDTH] },
      { name: "one", type: "int64", dims: [1], data: [1] },
    ],
    nodes: [
      { op: "Cast", inputs: ["input_ids"], outputs: ["ids"], attrs: { to: 1 } },
      { op: "Cast", inputs: ["attention_mask"], outputs: ["mask"], attrs: { to: 1 } },
      { op: "Mul", inputs: ["mask", "thousand"], outputs: ["mask1000"] },
      { op: "Add", inputs: ["ids", "mask1000"], outputs: ["shown"] },
      { op: "Shape", inputs: ["shown"], outputs: ["shape"] },
      { op: "Slice", inputs: ["shape", "zero", "one"], outputs: ["rows"] },
      { op: "Concat", inputs: ["rows", "width"], outputs: ["padShape"], attrs: { axis: 0 } },
      { op: "Expand", inputs: ["zeros", "padShape"], outputs: ["padding"] },
      { op: "Concat", inputs: ["shown", "padding"], outputs: ["wide"], attrs: { axis: 1 } },
      { op: "Slice", inputs: ["wide", "zero", "width", "one"], outputs: ["sentence_embedding"] },
    ],
  });
  const path = join(tmp, `echo-${idType}.onnx`);
  writeFileSync(path, bytes);
  return path;
}

for (const idType of ["int64", "int32"] as const) {
  test(`a batch is fed as ${idType} ids right-padded with the pad id, and a mask of its real tokens`, async () => {
    const model = await EmbeddingModel.load(feedEchoModel(idType), "cpu", 3, "inline");
    try {
      const big = 2 ** 31 - 1;
      const out = await model.embed([[5, 6, 7, 8], [9], [big, 0]]);
      expect(out.map((v) => Array.from(v))).toEqual([
        [1005, 1006, 1007, 1008, 0, 0],
        [1009, 3, 3, 3, 0, 0],
        [big + 1000, 1000, 3, 3, 0, 0].map((x) => Math.fround(x)),
      ]);
      // The vectors are views of the batch's one output buffer (the tokenizer pool copies those it moves).
      expect(new Set(out.map((v) => v.buffer)).size).toBe(1);
    } finally {
      await model.close();
    }
  });
}
