/** The tiny embedding model loads in real ONNX Runtime with the real model's signature. */
import { describe, expect, test } from "bun:test";
import { loadOrt } from "../../src/engines/onnx-runtime";
import { buildTinyEmbeddingModel } from "../support/onnx-builder";

describe("tiny embedding model", () => {
  test("has the EmbeddingGemma signature and yields unit vectors that ignore padding", async () => {
    const ort = await loadOrt();
    const session = await ort.InferenceSession.create(buildTinyEmbeddingModel({ vocabSize: 50, layers: 1 }));
    expect(session.inputNames).toEqual(["input_ids", "attention_mask"]);
    expect(session.outputNames).toContain("sentence_embedding");
    // Row 2 is [2, 10, 11] followed by one masked padding token.
    const ids2 = new ort.Tensor("int64", BigInt64Array.from([2n, 10n, 11n, 1n, 2n, 10n, 11n, 1n]), [2, 4]);
    const mask = new ort.Tensor("int64", BigInt64Array.from([1n, 1n, 1n, 1n, 1n, 1n, 1n, 0n]), [2, 4]);
    const out = await session.run({ input_ids: ids2, attention_mask: mask }, ["sentence_embedding"]);
    const e = out.sentence_embedding!;
    expect(e.dims).toEqual([2, 768]);
    const v = e.data as Float32Array;
    let n0 = 0;
    for (let i = 0; i < 768; i++) n0 += v[i]! * v[i]!;
    expect(Math.abs(Math.sqrt(n0) - 1)).toBeLessThan(1e-5);
    // Masked position must not change the second row compared with an unpadded 3-token input.
    const single = await session.run(
      { input_ids: new ort.Tensor("int64", BigInt64Array.from([2n, 10n, 11n]), [1, 3]), attention_mask: new ort.Tensor("int64", BigInt64Array.from([1n, 1n, 1n]), [1, 3]) },
      ["sentence_embedding"],
    );
    const s = single.sentence_embedding!.data as Float32Array;
    for (let i = 0; i < 768; i++) expect(Math.abs(s[i]! - v[768 + i]!)).toBeLessThan(1e-5);
    // Different inputs give different vectors.
    expect(Math.abs(v[0]! - v[768]!) + Math.abs(v[1]! - v[769]!)).toBeGreaterThan(0);
    await session.release();
  });
});
