import { describe, expect, test } from "bun:test";
import { encodeEmbedding, toBase64, toFloats, truncateAndNormalise } from "./vectors";

const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe("truncateAndNormalise", () => {
  test.each([
    [[0.6, 0.8, 0, 0], 4, [0.6, 0.8, 0, 0]],
    [[0.6, 0.8, 0, 0], 9, [0.6, 0.8, 0, 0]],
    [[0.5, 0.5, 0.5, 0.5], 2, [Math.SQRT1_2, Math.SQRT1_2]],
    [[3, 4, 12], 2, [0.6, 0.8]],
    [[-2, 0, 1], 1, [-1]],
    [[0, 0, 1], 2, [0, 0]],
  ] as [number[], number, number[]][])("%p to %d → %p", (v, dims, want) => {
    const out = truncateAndNormalise(Float32Array.from(v), dims);
    expect(out.length).toBe(want.length);
    out.forEach((x, i) => expect(x).toBeCloseTo(want[i]!, 6));
  });

  test("a truncated unit vector has norm 1 and does not alias the input", () => {
    const v = Float32Array.from({ length: 768 }, (_, i) => Math.sin(i + 1));
    const out = truncateAndNormalise(v, 100);
    expect(norm(out)).toBeCloseTo(1, 6);
    out[0] = 42;
    expect(v[0]).toBeCloseTo(Math.sin(1), 6);
  });
});

describe("wire encodings", () => {
  test("base64 is little-endian float32, decodable as OpenAI's SDK does", () => {
    const v = Float32Array.from([1, -0.5, 0.1, 3.4e38]);
    const b = Buffer.from(toBase64(v), "base64");
    expect(b.length).toBe(16);
    expect([0, 4, 8, 12].map((o) => b.readFloatLE(o))).toEqual(Array.from(v));
    expect(Array.from(new Float32Array(b.buffer, b.byteOffset, 4))).toEqual(Array.from(v));
  });

  test("base64 of a subarray covers only that view", () => {
    const whole = Float32Array.from([1, 2, 3, 4]);
    expect(Buffer.from(toBase64(whole.subarray(1, 3)), "base64").length).toBe(8);
  });

  test("floats are the exact float32 values", () => {
    const v = Float32Array.from([0.1, 1 / 3]);
    expect(toFloats(v)).toEqual([v[0]!, v[1]!]);
  });

  test("a float vector is written as JSON text that reads back as the float32 values", () => {
    const unit = Float32Array.from({ length: 768 }, (_, i) => Math.sin(i * 0.37) / 20);
    const text = encodeEmbedding(unit, { dims: 768, format: "float" });
    expect(Float32Array.from(JSON.parse(text) as number[])).toEqual(unit);
    expect(JSON.parse(encodeEmbedding(unit, { dims: 2, format: "float" }))).toHaveLength(2);
    expect(JSON.parse(encodeEmbedding(unit, { dims: 2, format: "base64" }))).toBe(toBase64(truncateAndNormalise(unit, 2)));
  });
});

