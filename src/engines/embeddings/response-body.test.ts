import { expect, test } from "bun:test";
import { embeddingsBody } from "./response-body";
import { encodeEmbedding } from "./vectors";
import { formatUsd, usdNumber } from "../../billing/money";

test("the body is OpenAI's list shape, in input order, exactly what JSON.stringify writes of it", () => {
  const vectors = [Float32Array.of(0.25, -0.5, 1e-7), Float32Array.of(1, 0, -0)];
  const units = 123; // 0.000000123 USD: a double would print it as 1.23e-7
  const usage = { prompt_tokens: 7, total_tokens: 7, cost: formatUsd(units) };
  for (const format of ["float", "base64"] as const) {
    const texts = vectors.map((v) => encodeEmbedding(v, { dims: 3, format }));
    const want = {
      object: "list",
      data: texts.map((t, index) => ({ object: "embedding", index, embedding: JSON.parse(t) })),
      model: 'embedding-300m "quoted"',
      usage: { prompt_tokens: 7, total_tokens: 7, cost: usdNumber(units) },
    };
    expect(embeddingsBody(texts, 'embedding-300m "quoted"', usage)).toBe(JSON.stringify(want));
  }
});
