import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { onnx } from "onnx-proto";
import { buildOnnxModel, seededFloats, type InitializerSpec, type NodeSpec } from "../../../test/support/onnx-builder";
import { fuseTransformer } from "./transformer-fusions";
import { fusedGraph, fusedGraphName } from "./transformer-fusions-file";
import { readModel } from "./onnx-graph";
import { createSession } from "../onnx-session";

const tmp = mkdtempSync(join(tmpdir(), "switchyard-fusions-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const B = 2;
const S = 5;
const H = 8;

/** The decomposed tanh GELU of `x` into `out`, as an exporter writes it; `form` varies the operand order and the cube. */
function geluNodes(p: string, x: string, out: string, form: "mul" | "pow"): NodeSpec[] {
  const cube: NodeSpec[] = form === "mul" ? [{ op: "Mul", inputs: [x, x], outputs: [`${p}_sq`] }, { op: "Mul", inputs: [`${p}_sq`, x], outputs: [`${p}_cube`] }] : [{ op: "Pow", inputs: [x, "three"], outputs: [`${p}_cube`] }];
  const swap = (a: string, b: string) => (form === "mul" ? [a, b] : [b, a]);
  return [
    ...cube,
    { op: "Mul", inputs: swap(`${p}_cube`, "c044715"), outputs: [`${p}_k`] },
    { op: "Add", inputs: swap(x, `${p}_k`), outputs: [`${p}_s`] },
    { op: "Mul", inputs: swap(`${p}_s`, "sqrt2pi"), outputs: [`${p}_i`] },
    { op: "Tanh", inputs: [`${p}_i`], outputs: [`${p}_t`] },
    { op: "Add", inputs: swap(`${p}_t`, "one"), outputs: [`${p}_p`] },
    { op: "Mul", inputs: swap(x, "half"), outputs: [`${p}_h`] },
    { op: "Mul", inputs: swap(`${p}_h`, `${p}_p`), outputs: [out] },
  ];
}

/** The rotate-half rotary embedding of `x` (last axis 4 wide) into `out`, with tables cos_full and sin_full [S, 4]. */
function ropeNodes(p: string, x: string, out: string): NodeSpec[] {
  return [
    { op: "Slice", inputs: [x, "i0", "i2", "last"], outputs: [`${p}_lo`] },
    { op: "Slice", inputs: [x, "i2", "i4", "last"], outputs: [`${p}_hi`] },
    { op: "Neg", inputs: [`${p}_hi`], outputs: [`${p}_neg`] },
    { op: "Concat", inputs: [`${p}_neg`, `${p}_lo`], outputs: [`${p}_rot`], attrs: { axis: -1 } },
    { op: "Mul", inputs: [x, "cos_full"], outputs: [`${p}_a`] },
    { op: "Mul", inputs: [`${p}_rot`, "sin_full"], outputs: [`${p}_b`] },
    { op: "Add", inputs: [`${p}_a`, `${p}_b`], outputs: [out] },
  ];
}

/**
 * x [B, S, H] through: GELU a (x·x·x) times an up projection; GELU b (Pow, operands swapped);
 * GELU c, whose tanh is also a graph output (left); and attention with two query heads and one
 * key/value head: Q and K rotated by position (rotary tables from Range(0, S, 1)), K normalised
 * per position, Kᵀ a Transpose into the scores' MatMul and its scale, V straight from its Reshape
 * (also an output: "v_heads"); the heads' output transposed back (two heads: left); and one "wide"
 * transpose of K times a [1, 1, 2, 4] constant, whose axis 2 is 2 (left).
 */
function encoderModel(): Uint8Array {
  const w = (name: string, dims: number[], seed: number): InitializerSpec => ({ name, type: "float32", dims, data: seededFloats(dims.reduce((a, b) => a * b, 1), seed, 0.5) });
  const scalar = (name: string, v: number): InitializerSpec => ({ name, type: "float32", dims: [], data: [v] });
  const shape = (name: string, v: number[]): InitializerSpec => ({ name, type: "int64", dims: [v.length], data: v });
  const nodes: NodeSpec[] = [
    { op: "MatMul", inputs: ["x", "w_gate"], outputs: ["gate"] },
    ...geluNodes("ga", "gate", "gelu_a", "mul"),
    { op: "MatMul", inputs: ["x", "w_up"], outputs: ["up"] },
    { op: "Mul", inputs: ["gelu_a", "up"], outputs: ["mlp"] },
    { op: "MatMul", inputs: ["x", "w_b"], outputs: ["gb_x"] },
    ...geluNodes("gb", "gb_x", "gelu_b", "pow"),
    { op: "MatMul", inputs: ["x", "w_c"], outputs: ["gc_x"] },
    ...geluNodes("gc", "gc_x", "gelu_c", "mul"),
    { op: "Identity", inputs: ["gc_t"], outputs: ["tanh_c"] },
    { op: "Shape", inputs: ["x"], outputs: ["x_shape"] },
    { op: "Gather", inputs: ["x_shape", "scalar1"], outputs: ["seq"] },
    { op: "Range", inputs: ["scalar0", "seq", "scalar1"], outputs: ["positions"] },
    { op: "Cast", inputs: ["positions"], outputs: ["positions_f"], attrs: { to: 1 } },
    { op: "Unsqueeze", inputs: ["positions_f", "i1"], outputs: ["position_rows"] },
    { op: "Mul", inputs: ["position_rows", "inv_freq"], outputs: ["freqs"] },
    { op: "Concat", inputs: ["freqs", "freqs"], outputs: ["freqs2"], attrs: { axis: -1 } },
    { op: "Cos", inputs: ["freqs2"], outputs: ["cos_full"] },
    { op: "Sin", inputs: ["freqs2"], outputs: ["sin_full"] },
    { op: "MatMul", inputs: ["x", "w_q"], outputs: ["qf"] },
    { op: "Reshape", inputs: ["qf", "heads2"], outputs: ["q4"] },
    { op: "Transpose", inputs: ["q4"], outputs: ["q_plain"], attrs: { perm: [0, 2, 1, 3] } },
    ...ropeNodes("q_rope", "q_plain", "q"),
    { op: "MatMul", inputs: ["x", "w_k"], outputs: ["kf"] },
    { op: "Reshape", inputs: ["kf", "heads1"], outputs: ["k4"] },
    { op: "Mul", inputs: ["k4", "k4"], outputs: ["k_sq"] },
    { op: "ReduceMean", inputs: ["k_sq"], outputs: ["k_ms"], attrs: { axes: [-1] } },
    { op: "Add", inputs: ["k_ms", "eps"], outputs: ["k_var"] },
    { op: "Sqrt", inputs: ["k_var"], outputs: ["k_rms"] },
    { op: "Reciprocal", inputs: ["k_rms"], outputs: ["k_inv"] },
    { op: "Mul", inputs: ["k4", "k_inv"], outputs: ["k_n"] },
    { op: "Mul", inputs: ["k_n", "k_norm"], outputs: ["k_w"] },
    { op: "Transpose", inputs: ["k_w"], outputs: ["k_plain"], attrs: { perm: [0, 2, 1, 3] } },
    ...ropeNodes("k_rope", "k_plain", "k"),
    { op: "Transpose", inputs: ["k"], outputs: ["k_t"], attrs: { perm: [0, 1, 3, 2] } },
    { op: "MatMul", inputs: ["q", "k_t"], outputs: ["scores"] },
    { op: "Mul", inputs: ["scores", "scale"], outputs: ["scaled"] },
    { op: "Softmax", inputs: ["scaled"], outputs: ["probs"], attrs: { axis: -1 } },
    { op: "MatMul", inputs: ["x", "w_v"], outputs: ["vf"] },
    { op: "Reshape", inputs: ["vf", "heads1"], outputs: ["v4"] },
    { op: "Transpose", inputs: ["v4"], outputs: ["v"], attrs: { perm: [0, 2, 1, 3] } },
    { op: "MatMul", inputs: ["probs", "v"], outputs: ["o"] },
    { op: "Identity", inputs: ["v"], outputs: ["v_heads"] },
    { op: "Transpose", inputs: ["o"], outputs: ["o_t"], attrs: { perm: [0, 2, 1, 3] } },
    { op: "Reshape", inputs: ["o_t", "hidden"], outputs: ["attn"] },
    { op: "Mul", inputs: ["k4", "widen"], outputs: ["k_wide"] },
    { op: "Transpose", inputs: ["k_wide"], outputs: ["wide"], attrs: { perm: [0, 2, 1, 3] } },
  ];
  return buildOnnxModel({
    inputs: [{ name: "x", type: "float32", dims: [B, S, H] }],
    outputs: ([["mlp", [B, S, 12]], ["gelu_b", [B, S, 6]], ["gelu_c", [B, S, 6]], ["tanh_c", [B, S, 6]], ["attn", [B, S, H]], ["wide", [B, 2, S, 4]], ["v_heads", [B, 1, S, 4]]] as const).map(([name, dims]) => ({ name, type: "float32" as const, dims: [...dims] })),
    initializers: [
      w("w_gate", [H, 12], 1), w("w_up", [H, 12], 2), w("w_b", [H, 6], 3), w("w_c", [H, 6], 4),
      w("w_q", [H, 8], 5), w("w_k", [H, 4], 6), w("w_v", [H, 4], 7), w("k_norm", [4], 8), w("widen", [1, 1, 2, 4], 9),
      scalar("three", 3), scalar("c044715", 0.044715), scalar("sqrt2pi", Math.sqrt(2 / Math.PI)), scalar("one", 1), scalar("half", 0.5),
      scalar("eps", 1e-6), scalar("scale", 0.5),
      shape("heads2", [0, 0, 2, 4]), shape("heads1", [0, 0, 1, 4]), shape("hidden", [0, 0, H]),
      { name: "inv_freq", type: "float32", dims: [1, 2], data: [1, 0.1] },
      ...([["i0", 0], ["i1", 1], ["i2", 2], ["i4", 4]] as const).map(([name, v]) => ({ name, type: "int64" as const, dims: [1], data: [v] })),
      shape("last", [-1]),
      { name: "scalar0", type: "int64", dims: [], data: [0] },
      { name: "scalar1", type: "int64", dims: [], data: [1] },
    ],
    nodes,
  });
}

const input = () => ({ x: new ort.Tensor("float32", seededFloats(B * S * H, 42, 2), [B, S, H]) });

async function outputsOf(model: Uint8Array | string): Promise<Record<string, Float32Array>> {
  const s = typeof model === "string" ? await ort.InferenceSession.create(model) : await ort.InferenceSession.create(model);
  const out = await s.run(input());
  await s.release();
  return Object.fromEntries(Object.entries(out).map(([k, t]) => [k, t.data as Float32Array]));
}

const ops = (model: Uint8Array) => readModel(model).nodes.map((n) => n.opType);
const count = (list: string[], op: string) => list.filter((o) => o === op).length;

describe("fuseTransformer", () => {
  const plain = encoderModel();
  const fused = fuseTransformer(plain);

  test("each matching GELU becomes a FastGelu, Kᵀ is read in place, single-head transposes become reshapes, rotations and RMS norms one operator each; the rest is left", () => {
    expect({ gelu: fused.gelu, keyTranspose: fused.keyTranspose, singleHead: fused.singleHead, rotary: fused.rotary, rmsNorm: fused.rmsNorm }).toEqual({ gelu: 2, keyTranspose: 1, singleHead: 2, rotary: 2, rmsNorm: 1 });
    const after = ops(fused.model!);
    expect(count(after, "FastGelu")).toBe(2);
    // GELU c: its tanh is a graph output too, so its chain stays.
    expect(count(after, "Tanh")).toBe(1);
    expect(count(after, "FusedMatMul")).toBe(1);
    // Left: Q's (two heads), the heads' output's, and the widened K's.
    expect(count(after, "Transpose")).toBe(3);
    expect(count(after, "Reshape")).toBe(count(ops(plain), "Reshape") + 2);
    // One half-width pair of tables for both rotations; the full-width ones, read by nothing now, are gone.
    expect([count(after, "RotaryEmbedding"), count(after, "Cos"), count(after, "Sin"), count(after, "Neg"), count(after, "Slice")]).toEqual([2, 1, 1, 0, 0]);
    expect(count(after, "Concat")).toBe(0);
    expect([count(after, "SimplifiedLayerNormalization"), count(after, "ReduceMean"), count(after, "Reciprocal")]).toEqual([1, 0, 0]);
  });

  test("what only changed layout is bit-identical; the GELUs and the rotated attention within float rounding", async () => {
    const [a, b] = [await outputsOf(plain), await outputsOf(fused.model!)];
    for (const name of ["v_heads", "wide", "gelu_c", "tanh_c"]) expect(b[name]).toEqual(a[name]!);
    for (const name of ["mlp", "gelu_b", "attn"]) {
      expect(b[name]!.length).toBe(a[name]!.length);
      a[name]!.forEach((v, i) => expect(Math.abs(b[name]![i]! - v)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(v))));
    }
  });

  test("a GELU with another constant, or a transpose whose axis 2 is not proved 1, is left", () => {
    const m = buildOnnxModel({
      inputs: [{ name: "x", type: "float32", dims: [B, S, 1, 4] }],
      outputs: [{ name: "g", type: "float32", dims: [B, S, 1, 4] }, { name: "t", type: "float32", dims: [B, 1, S, 4] }],
      initializers: [
        { name: "three", type: "float32", dims: [], data: [3] }, { name: "c044715", type: "float32", dims: [], data: [0.05] }, { name: "sqrt2pi", type: "float32", dims: [], data: [Math.sqrt(2 / Math.PI)] },
        { name: "one", type: "float32", dims: [], data: [1] }, { name: "half", type: "float32", dims: [], data: [0.5] },
      ],
      // x's axis 2 is 1, but a graph input's shape is not taken as proof (only a Reshape to a constant shape is).
      nodes: [...geluNodes("g", "x", "g", "pow"), { op: "Transpose", inputs: ["x"], outputs: ["t"], attrs: { perm: [0, 2, 1, 3] } }],
    });
    expect(fuseTransformer(m)).toEqual({ model: null, gelu: 0, keyTranspose: 0, singleHead: 0, rotary: 0, rmsNorm: 0 });
  });
});

/** `model` with its w_gate weights moved to `weights.bin` beside it, as large exports keep theirs. */
function withExternalWeights(dir: string, model: Uint8Array): string {
  const m = onnx.ModelProto.decode(model);
  const t = m.graph!.initializer!.find((i) => i.name === "w_gate")!;
  writeFileSync(join(dir, "weights.bin"), t.rawData!);
  t.externalData = [{ key: "location", value: "weights.bin" }, { key: "offset", value: "0" }, { key: "length", value: String(t.rawData!.length) }];
  t.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
  t.rawData = new Uint8Array(0);
  const path = join(dir, "model.onnx");
  writeFileSync(path, onnx.ModelProto.encode(m).finish());
  return path;
}

describe("fusedGraph", () => {
  test("made once beside the model, its weights read from the model's external data file, then reused", async () => {
    const dir = join(tmp, "kept");
    mkdirSync(dir);
    const model = withExternalWeights(dir, encoderModel());
    // The first version's graph (before RMS norms were fused) goes once this one is saved.
    writeFileSync(join(dir, "model.fused.onnx"), "x");
    const first = fusedGraph(model);
    expect(() => readFileSync(join(dir, "model.fused.onnx"))).toThrow();
    expect(first).toEqual({ path: join(dir, fusedGraphName(model)), note: "made (2 tanh GELUs as FastGelu, 1 transposed keys read in place, 2 single-head transposes as reshapes, 2 rotary embeddings as one operator, 1 RMS norms as one operator)" });
    expect(fusedGraph(model)).toEqual({ path: first.path!, note: "reused" });
    expect((await outputsOf(first.path!)).v_heads).toEqual((await outputsOf(model)).v_heads!);
  });

  test("a session asks for it on the providers its tuning names, and says so", async () => {
    const dir = join(tmp, "session");
    mkdirSync(dir);
    const model = withExternalWeights(dir, encoderModel());
    const on = await createSession(model, "cpu", { fusionsOn: ["cpu"] });
    expect(on.fusions).toStartWith("made (2 tanh GELUs");
    const off = await createSession(model, "cpu", { fusionsOn: ["cuda"] });
    expect(off.fusions).toBeUndefined();
    const [a, b] = [await on.session.run(input()), await off.session.run(input())];
    expect(a.v_heads!.data).toEqual(b.v_heads!.data);
    await Promise.all([on.session.release(), off.session.release()]);
  });

  test("when the graph cannot be saved it is loaded from memory, its external weights found in the model's folder", async () => {
    const dir = join(tmp, "unwritable");
    mkdirSync(dir);
    const model = withExternalWeights(dir, encoderModel());
    // A non-empty folder where the graph would go (older than the model): the rename fails, as root too.
    const blocker = join(dir, fusedGraphName(model));
    mkdirSync(join(blocker, "x"), { recursive: true });
    utimesSync(blocker, new Date(0), new Date(0));
    const got = fusedGraph(model);
    expect(got.path).toBeUndefined();
    expect(got.note).toStartWith("2 tanh GELUs as FastGelu, 1 transposed keys read in place, 2 single-head transposes as reshapes, 2 rotary embeddings as one operator, 1 RMS norms as one operator, in memory (not saved:");
    const created = await createSession(model, "cpu", { fusionsOn: ["cpu"] });
    expect(created.fusions).toStartWith("2 tanh GELUs");
    const out = await created.session.run(input());
    expect(out.v_heads!.data).toEqual((await outputsOf(model)).v_heads!);
    await created.session.release();
  });

  test("a model without what the fusions need is loaded as it is, and nothing is written", () => {
    const dir = join(tmp, "plain");
    mkdirSync(dir);
    const model = join(dir, "model.onnx");
    writeFileSync(model, buildOnnxModel({ inputs: [{ name: "x", type: "float32", dims: [1] }], outputs: [{ name: "y", type: "float32", dims: [1] }], nodes: [{ op: "Relu", inputs: ["x"], outputs: ["y"] }] }));
    expect(fusedGraph(model)).toEqual({ path: model });
    expect(() => readFileSync(join(dir, fusedGraphName(model)))).toThrow();
  });
});
