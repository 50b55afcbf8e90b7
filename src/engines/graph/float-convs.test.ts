import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { buildOnnxModel, onnxType, seededFloats, type InitializerSpec, type NodeSpec } from "../../../test/support/onnx-builder";
import { floatConvs } from "./float-convs";
import { floatConvsGraph, floatConvsName } from "./float-convs-file";
import { readModel } from "./onnx-graph";

const tmp = mkdtempSync(join(tmpdir(), "switchyard-float-convs-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const C = 4;
const T = 9;
/** Uint8 weights of a conv [out, C, k] and their zero point. */
const weights = (out: number, k: number, seed: number) => Uint8Array.from(seededFloats(out * C * k, seed), (x) => Math.round(128 + x * 100));

/**
 * What ONNX Runtime's dynamic quantisation makes of three convolutions of x [1, C, T]:
 *   a: 3 channels, kernel 3, pads 1, with a bias (the Add of a quantised bias);
 *   b: 2 channels, kernel 1, no bias, no weight zero point input;
 *   c: as b, but the ConvInteger's output is also a graph output: it must be left as it is.
 */
function quantisedModel(): Uint8Array {
  const inits: InitializerSpec[] = [
    { name: "wa", type: "uint8", dims: [3, C, 3], data: weights(3, 3, 1) },
    { name: "wa_zp", type: "uint8", dims: [], data: [120] },
    { name: "wa_scale", type: "float32", dims: [], data: [0.01] },
    { name: "bias_a", type: "float32", dims: [3], data: [0.5, -0.25, 2] },
    { name: "bias_shape", type: "int64", dims: [3], data: [1, 3, 1] },
    { name: "wb", type: "uint8", dims: [2, C, 1], data: weights(2, 1, 2) },
    { name: "wb_scale", type: "float32", dims: [], data: [0.02] },
  ];
  const nodes: NodeSpec[] = [
    { op: "DynamicQuantizeLinear", inputs: ["x"], outputs: ["xq", "xs", "xzp"] },
    { op: "Mul", inputs: ["xs", "wa_scale"], outputs: ["sa"] },
    { op: "Div", inputs: ["bias_a", "sa"], outputs: ["bias_a_div"] },
    { op: "Floor", inputs: ["bias_a_div"], outputs: ["bias_a_floor"] },
    { op: "Cast", inputs: ["bias_a_floor"], outputs: ["bias_a_int"], attrs: { to: onnxType("int32") } },
    { op: "Reshape", inputs: ["bias_a_int", "bias_shape"], outputs: ["bias_a_q"] },
    { op: "ConvInteger", inputs: ["xq", "wa", "xzp", "wa_zp"], outputs: ["ya_int"], attrs: { auto_pad: "NOTSET", kernel_shape: [3], pads: [1, 1], strides: [1], dilations: [1], group: 1 }, name: "conv_a" },
    { op: "Add", inputs: ["ya_int", "bias_a_q"], outputs: ["ya_biased"] },
    { op: "Cast", inputs: ["ya_biased"], outputs: ["ya_f"], attrs: { to: onnxType("float32") } },
    { op: "Mul", inputs: ["ya_f", "sa"], outputs: ["a"] },
    { op: "Mul", inputs: ["wb_scale", "xs"], outputs: ["sb"] },
    { op: "ConvInteger", inputs: ["xq", "wb", "xzp"], outputs: ["yb_int"], attrs: { kernel_shape: [1] }, name: "conv_b" },
    { op: "Cast", inputs: ["yb_int"], outputs: ["yb_f"], attrs: { to: onnxType("float32") } },
    { op: "Mul", inputs: ["sb", "yb_f"], outputs: ["b"] },
    { op: "ConvInteger", inputs: ["xq", "wb", "xzp"], outputs: ["yc_int"], attrs: { kernel_shape: [1] }, name: "conv_c" },
    { op: "Cast", inputs: ["yc_int"], outputs: ["yc_f"], attrs: { to: onnxType("float32") } },
    { op: "Mul", inputs: ["sb", "yc_f"], outputs: ["c"] },
  ];
  return buildOnnxModel({
    inputs: [{ name: "x", type: "float32", dims: [1, C, T] }],
    outputs: [
      { name: "a", type: "float32", dims: [1, 3, T] },
      { name: "b", type: "float32", dims: [1, 2, T] },
      { name: "c", type: "float32", dims: [1, 2, T] },
      { name: "yc_int", type: "int32", dims: [1, 2, T] },
    ],
    nodes,
    initializers: inits,
  });
}

/** conv1d in float: y[o][t] = bias[o] + Σ w[o][c][j] · x[c][t + j − pad]. */
function conv1d(x: Float32Array, w: Float64Array, out: number, k: number, pad: number, bias: number[] = []): Float32Array {
  const y = new Float32Array(out * T);
  for (let o = 0; o < out; o++)
    for (let t = 0; t < T; t++) {
      let s = bias[o] ?? 0;
      for (let c = 0; c < C; c++)
        for (let j = 0; j < k; j++) {
          const at = t + j - pad;
          if (at >= 0 && at < T) s += w[(o * C + c) * k + j]! * x[c * T + at]!;
        }
      y[o * T + t] = s;
    }
  return y;
}

async function run(model: Uint8Array, x: Float32Array): Promise<Record<string, Float32Array>> {
  const session = await ort.InferenceSession.create(model);
  try {
    const out = await session.run({ x: new ort.Tensor("float32", x, [1, C, T]) }, ["a", "b", "c"]);
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data as Float32Array]));
  } finally {
    await session.release();
  }
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

describe("floatConvs", () => {
  const quantised = quantisedModel();
  const made = floatConvs(quantised);

  test("each matching chain becomes one float Conv; a chain whose values are read elsewhere is left", () => {
    expect([made.replaced, made.left]).toEqual([2, 1]);
    const g = readModel(made.model!);
    const ops = g.nodes.map((n) => `${n.opType}:${n.name}`);
    expect(ops.filter((o) => o.startsWith("ConvInteger"))).toEqual(["ConvInteger:conv_c"]);
    // Each as a 2-D convolution of height 1 (ORT's blocked CPU kernels), between an Unsqueeze and a Squeeze.
    expect(ops.filter((o) => /^(Conv|Unsqueeze|Squeeze):/.test(o))).toEqual(["Unsqueeze:conv_a_to_2d", "Conv:conv_a_float", "Squeeze:conv_a_to_1d", "Unsqueeze:conv_b_to_2d", "Conv:conv_b_float", "Squeeze:conv_b_to_1d"]);
    // The bias arithmetic of chain a is gone; the quantiser stays for chain c.
    for (const gone of ["Div", "Floor", "Reshape", "Add"]) expect(ops.some((o) => o.startsWith(`${gone}:`))).toBe(false);
    expect(ops.some((o) => o.startsWith("DynamicQuantizeLinear"))).toBe(true);
    // Initializers only chain c still needs, and the float weights.
    expect(g.initializers.map((t) => t.name).sort()).toEqual(["bias_a", "float_convs_height_axis", "wa_float", "wb", "wb_float", "wb_scale"]);
    expect(g.initializers.find((t) => t.name === "wa_float")!.dims).toEqual([3, C, 1, 3]);
  });

  test("the float Convs compute conv(x, (W_q − W_zp)·W_scale) + bias, and the quantised graph comes close to it", async () => {
    const x = seededFloats(C * T, 9, 2);
    const wa = Float64Array.from(weights(3, 3, 1), (q) => (q - 120) * Math.fround(0.01));
    const wb = Float64Array.from(weights(2, 1, 2), (q) => q * Math.fround(0.02));
    const wantA = conv1d(x, wa, 3, 3, 1, [0.5, -0.25, 2]);
    const wantB = conv1d(x, wb, 2, 1, 0);
    const float = await run(made.model!, x);
    expect(maxDiff(float.a!, wantA)).toBeLessThan(1e-4);
    expect(maxDiff(float.b!, wantB)).toBeLessThan(1e-4);
    const int8 = await run(quantised, x);
    // Quantising x to 8 bits moves each output by a few per cent of its range, no more.
    const range = (v: Float32Array) => v.reduce((m, y) => Math.max(m, Math.abs(y)), 0);
    expect(maxDiff(int8.a!, wantA)).toBeLessThan(0.05 * range(wantA));
    expect(maxDiff(int8.b!, wantB)).toBeLessThan(0.05 * range(wantB));
    // The chain left alone answers as before.
    expect(Array.from(float.c!)).toEqual(Array.from(int8.c!));
  });

  test("a model without a matching chain is not rewritten", () => {
    const plain = buildOnnxModel({ inputs: [{ name: "x", type: "float32", dims: [1] }], outputs: [{ name: "y", type: "float32", dims: [1] }], nodes: [{ op: "Relu", inputs: ["x"], outputs: ["y"] }] });
    expect(floatConvs(plain)).toEqual({ model: null, replaced: 0, left: 0 });
  });
});

describe("floatConvsGraph", () => {
  test("the graph is made once beside the model and reused while it is newer", () => {
    const dir = join(tmp, "kept");
    mkdirSync(dir);
    const model = join(dir, "model_quantized.onnx");
    writeFileSync(model, quantisedModel());
    const first = floatConvsGraph(model);
    expect(first).toEqual({ path: join(dir, "model_quantized.float-convs-2d.onnx"), note: "made (2 float convolutions, 1 left quantised)" });
    expect(readFileSync(first.path!).length).toBeGreaterThan(0);
    expect(floatConvsGraph(model)).toEqual({ path: first.path!, note: "reused" });
    // A model replaced after the graph was made: made again.
    const later = new Date(statSync(first.path!).mtimeMs + 10_000);
    utimesSync(model, later, later);
    expect(floatConvsGraph(model).note).toStartWith("made");
  });

  test("an earlier version's 1-D graph and its optimised graphs are removed once the 2-D graph is saved; other files stay", () => {
    const dir = join(tmp, "upgraded");
    mkdirSync(dir);
    const model = join(dir, "model.onnx");
    writeFileSync(model, quantisedModel());
    const earlier = ["model.float-convs.onnx", "model.float-convs.opt.cpu.ort1.30.0.onnx", "model.float-convs.opt.cpu.ort1.30.0.onnx_data"];
    const others = ["model.opt.cpu.ort1.30.0.onnx", "other.float-convs.onnx"];
    for (const f of [...earlier, ...others]) writeFileSync(join(dir, f), "x");
    expect(floatConvsGraph(model).note).toStartWith("made");
    expect(readdirSync(dir).sort()).toEqual(["model.float-convs-2d.onnx", "model.onnx", ...others].sort());
  });

  test("a model without quantised convolutions is loaded as it is, and nothing is written", () => {
    const dir = join(tmp, "plain");
    mkdirSync(dir);
    const model = join(dir, "model.onnx");
    writeFileSync(model, buildOnnxModel({ inputs: [{ name: "x", type: "float32", dims: [1] }], outputs: [{ name: "y", type: "float32", dims: [1] }], nodes: [{ op: "Relu", inputs: ["x"], outputs: ["y"] }] }));
    expect(floatConvsGraph(model)).toEqual({ path: model });
    expect(() => statSync(join(dir, floatConvsName(model)))).toThrow();
  });

  test("when the graph cannot be saved it is loaded from memory, with the reason", () => {
    const dir = join(tmp, "unwritable");
    mkdirSync(dir);
    const model = join(dir, "model.onnx");
    writeFileSync(model, quantisedModel());
    // A non-empty folder where the graph would go (older than the model): the rename fails, as root too.
    const blocker = join(dir, floatConvsName(model));
    mkdirSync(join(blocker, "x"), { recursive: true });
    utimesSync(blocker, new Date(0), new Date(0));
    const got = floatConvsGraph(model);
    expect(got.path).toBeUndefined();
    expect(got.bytes).toEqual(floatConvs(quantisedModel()).model!);
    expect(got.note).toStartWith("2 float convolutions, 1 left quantised, in memory (not saved:");
  });
});
