import { describe, expect, test } from "bun:test";
import { writeFloat32s } from "./float32-text";

/** One value's text: the array's one element. */
const float32Text = (x: number) => writeFloat32s(Float32Array.of(x)).slice(1, -1);

/** The shortest text by brute force: the fewest significant digits whose decimal reads back as the float32 `x`. */
function shortest(x: number): string {
  if (x === 0) return "0";
  if (!Number.isFinite(x)) return "null";
  for (let p = 1; p <= 9; p++) {
    const t = Number(x.toPrecision(p));
    if (Math.fround(t) === x) return String(t);
  }
  throw new Error(`no text for ${x}`);
}

describe("float32Text", () => {
  test.each([
    [0, "0"],
    [-0, "0"],
    [1, "1"],
    [-1, "-1"],
    [0.1, "0.1"],
    [1 / 3, "0.33333334"],
    [-0.012779145, "-0.012779145"],
    [0.5, "0.5"],
    [100, "100"],
    [123456.7, "123456.7"],
    [2 ** 24 + 2, "16777218"],
    [1e-6, "0.000001"],
    [1e-7, "1e-7"],
    [1.5e-7, "1.5e-7"],
    [1e-45, "1e-45"],
    [-1.1754943508222875e-38, "-1.1754944e-38"],
    [3.4028234663852886e38, "3.4028235e+38"],
    [1e21, "1e+21"],
    [1e20, "100000000000000000000"],
    [NaN, "null"],
    [Infinity, "null"],
    [-Infinity, "null"],
  ])("%p → %s", (x, text) => {
    expect(float32Text(Math.fround(x))).toBe(text);
  });

  test("every exponent, subnormals included: the shortest decimal, which reads back as the same float32", () => {
    const bits = new Uint32Array(1 << 16);
    for (let i = 0; i < bits.length; i++) bits[i] = (Math.imul(i + 1, 2654435761) ^ (i << 7)) >>> 0;
    const values = new Float32Array(bits.buffer);
    for (const x of values) {
      const text = float32Text(x);
      expect(text).toBe(shortest(x));
      if (Number.isFinite(x)) expect(Math.fround(Number(text))).toBe(x);
    }
  });

  test("values beside powers of ten, where log10 may be one off", () => {
    for (let e = -45; e <= 38; e++) {
      const p = Math.fround(Number(`1e${e}`));
      const below = new Float32Array(new Uint32Array([new Uint32Array(new Float32Array([p]).buffer)[0]! - 1]).buffer)[0]!;
      for (const x of [p, below]) if (x > 0 && Number.isFinite(x)) expect(float32Text(x)).toBe(shortest(x));
    }
  });
});

describe("writeFloat32s", () => {
  test("a JSON array of each value's text", () => {
    const v = Float32Array.from([0.1, -2.5, NaN, 1e-7, 0]);
    expect(writeFloat32s(v)).toBe("[0.1,-2.5,null,1e-7,0]");
    expect(writeFloat32s(new Float32Array(0))).toBe("[]");
  });

  test("a unit vector reads back exactly as float32, and is shorter than the doubles' text", () => {
    const unit = Float32Array.from({ length: 768 }, (_, i) => Math.sin(i * 0.37) / 20);
    const text = writeFloat32s(unit);
    expect(Float32Array.from(JSON.parse(text) as number[])).toEqual(unit);
    expect(text.length).toBeLessThan(JSON.stringify(Array.from(unit)).length * 0.7);
  });

  test("a long vector grows the scratch and later short ones are not corrupted by it", () => {
    const long = Float32Array.from({ length: 5000 }, (_, i) => -Math.fround(1 / (i + 3)));
    expect(Float32Array.from(JSON.parse(writeFloat32s(long)) as number[])).toEqual(long);
    expect(writeFloat32s(Float32Array.from([0.25]))).toBe("[0.25]");
  });
});
