/**
 * Builds small ONNX models in memory (ModelProto bytes) for tests and benchmarks, so the real
 * ONNX Runtime sessions in src/ can be exercised without downloading weights.
 *
 * `buildOnnxModel` is generic (inputs, outputs, nodes, initializers; opset 17 by default);
 * `buildTinyEmbeddingModel` reproduces the signature of the EmbeddingGemma-300m ONNX export:
 * input_ids / attention_mask int64 [batch, seq] → sentence_embedding float32 [batch, 768]
 * (plus last_hidden_state, listed first, so code must pick outputs by name).
 */
import { onnx } from "onnx-proto";
import { rng } from "./seeded-random";

export type ElemType = "float32" | "int64" | "int32" | "bool" | "uint8" | "int8";
/** A dimension: a fixed size, or a symbolic name (dynamic). */
export type Dim = number | string;

export interface ValueSpec {
  name: string;
  type: ElemType;
  dims: Dim[];
}

export type AttrValue = number | number[] | string | { float: number } | { floats: number[] };

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  attrs?: Record<string, AttrValue>;
  name?: string;
  domain?: string;
}

export interface InitializerSpec {
  name: string;
  type: ElemType;
  dims: number[];
  data: Float32Array | BigInt64Array | Int32Array | Uint8Array | Int8Array | number[];
}

export interface ModelSpec {
  inputs: ValueSpec[];
  outputs: ValueSpec[];
  nodes: NodeSpec[];
  initializers?: InitializerSpec[];
  opset?: number;
  name?: string;
}

const ELEM: Record<ElemType, onnx.TensorProto.DataType> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  bool: onnx.TensorProto.DataType.BOOL,
  uint8: onnx.TensorProto.DataType.UINT8,
  int8: onnx.TensorProto.DataType.INT8,
};

/** The ONNX DataType number of an element type (for Cast's `to` attribute). */
export function onnxType(t: ElemType): number {
  return ELEM[t];
}

function valueInfo(v: ValueSpec): onnx.IValueInfoProto {
  return {
    name: v.name,
    type: {
      tensorType: {
        elemType: ELEM[v.type],
        shape: { dim: v.dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, v: AttrValue): onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === "number") return { name, type: T.INT, i: v };
  if (typeof v === "string") return { name, type: T.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: T.INTS, ints: v };
  if ("float" in v) return { name, type: T.FLOAT, f: v.float };
  return { name, type: T.FLOATS, floats: v.floats };
}

function rawBytes(init: InitializerSpec): Uint8Array {
  const d = init.data;
  let typed: Float32Array | BigInt64Array | Int32Array | Uint8Array | Int8Array;
  if (!Array.isArray(d)) typed = d;
  else if (init.type === "float32") typed = Float32Array.from(d);
  else if (init.type === "int64") typed = BigInt64Array.from(d.map((x) => BigInt(x)));
  else if (init.type === "int32") typed = Int32Array.from(d);
  else if (init.type === "int8") typed = Int8Array.from(d);
  else typed = Uint8Array.from(d);
  // ONNX raw_data is little-endian, as are typed arrays on every platform we run on.
  return new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
}

/** Serialises a model to ONNX protobuf bytes, ready for InferenceSession.create(bytes). */
export function buildOnnxModel(spec: ModelSpec): Uint8Array {
  const model: onnx.IModelProto = {
    irVersion: 8,
    producerName: "switchyard-tests",
    opsetImport: [{ domain: "", version: spec.opset ?? 17 }],
    graph: {
      name: spec.name ?? "test-graph",
      input: spec.inputs.map(valueInfo),
      output: spec.outputs.map(valueInfo),
      initializer: (spec.initializers ?? []).map((i) => ({
        name: i.name,
        dims: i.dims,
        dataType: ELEM[i.type],
        rawData: rawBytes(i),
      })),
      node: spec.nodes.map((n, idx) => ({
        name: n.name ?? `${n.op}_${idx}`,
        opType: n.op,
        domain: n.domain ?? "",
        input: n.inputs,
        output: n.outputs,
        attribute: Object.entries(n.attrs ?? {}).map(([k, v]) => attribute(k, v)),
      })),
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

/** Deterministic pseudo-random floats in [-1, 1) (mulberry32), so models are reproducible. */
export function seededFloats(n: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  const next = rng(seed);
  for (let i = 0; i < n; i++) out[i] = (next() * 2 - 1) * scale;
  return out;
}

export interface TinyEmbeddingOptions {
  /** Rows of the embedding table; every token id the tokenizer can produce must be below it. */
  vocabSize: number;
  /** Output width; the real model's is 768. */
  hidden?: number;
  /**
   * Per-token MatMul+Tanh layers of [hidden, hidden] after the lookup: each costs about
   * 2·hidden² FLOPs per token, enough that batching (one large GEMM instead of many small
   * ones plus per-run overhead) visibly matters in benchmarks.
   */
  layers?: number;
  /**
   * Width of a dense projection head after pooling (EmbeddingGemma has 768→3072→768), 0 for none.
   * Its weights are read once per run whatever the batch size, which is what makes batching pay
   * on CPU as it does for the real model.
   */
  denseHead?: number;
  seed?: number;
}

/**
 * Gather(table, input_ids) → [MatMul+Tanh]×layers → mean over positions where attention_mask = 1
 * → optional dense head → L2 normalise. Outputs last_hidden_state [batch, seq, hidden] and sentence_embedding
 * [batch, hidden], in that order (as the real export lists them).
 */
export function buildTinyEmbeddingModel(opts: TinyEmbeddingOptions): Uint8Array {
  const H = opts.hidden ?? 768;
  const layers = opts.layers ?? 0;
  const seed = opts.seed ?? 7;
  const inits: InitializerSpec[] = [
    { name: "table", type: "float32", dims: [opts.vocabSize, H], data: seededFloats(opts.vocabSize * H, seed) },
    { name: "axis1", type: "int64", dims: [1], data: [1] },
    { name: "axis2", type: "int64", dims: [1], data: [2] },
    { name: "eps", type: "float32", dims: [], data: [1e-9] },
  ];
  const nodes: NodeSpec[] = [{ op: "Gather", inputs: ["table", "input_ids"], outputs: ["h0"], attrs: { axis: 0 } }];
  let h = "h0";
  for (let l = 0; l < layers; l++) {
    // Scaled so activations stay in Tanh's useful range.
    inits.push({ name: `w${l}`, type: "float32", dims: [H, H], data: seededFloats(H * H, seed + 101 + l, 1 / Math.sqrt(H)) });
    nodes.push({ op: "MatMul", inputs: [h, `w${l}`], outputs: [`m${l}`] });
    nodes.push({ op: "Tanh", inputs: [`m${l}`], outputs: [`h${l + 1}`] });
    h = `h${l + 1}`;
  }
  nodes.push(
    { op: "Identity", inputs: [h], outputs: ["last_hidden_state"] },
    { op: "Cast", inputs: ["attention_mask"], outputs: ["maskf"], attrs: { to: onnxType("float32") } },
    { op: "Unsqueeze", inputs: ["maskf", "axis2"], outputs: ["mask3"] },
    { op: "Mul", inputs: [h, "mask3"], outputs: ["masked"] },
    { op: "ReduceSum", inputs: ["masked", "axis1"], outputs: ["summed"], attrs: { keepdims: 0 } },
    { op: "ReduceSum", inputs: ["mask3", "axis1"], outputs: ["count"], attrs: { keepdims: 0 } },
    { op: "Max", inputs: ["count", "eps"], outputs: ["countSafe"] },
    { op: "Div", inputs: ["summed", "countSafe"], outputs: ["pooled"] },
  );
  const D = opts.denseHead ?? 0;
  if (D > 0) {
    inits.push(
      { name: "dense1", type: "float32", dims: [H, D], data: seededFloats(H * D, seed + 501, 1 / Math.sqrt(H)) },
      { name: "dense2", type: "float32", dims: [D, H], data: seededFloats(D * H, seed + 502, 1 / Math.sqrt(D)) },
    );
    nodes.push(
      { op: "MatMul", inputs: ["pooled", "dense1"], outputs: ["d1"] },
      { op: "MatMul", inputs: ["d1", "dense2"], outputs: ["mean"] },
    );
  } else nodes.push({ op: "Identity", inputs: ["pooled"], outputs: ["mean"] });
  nodes.push(
    { op: "Mul", inputs: ["mean", "mean"], outputs: ["sq"] },
    { op: "ReduceSum", inputs: ["sq", "axis1"], outputs: ["sumsq"], attrs: { keepdims: 1 } },
    { op: "Sqrt", inputs: ["sumsq"], outputs: ["norm"] },
    { op: "Max", inputs: ["norm", "eps"], outputs: ["normSafe"] },
    { op: "Div", inputs: ["mean", "normSafe"], outputs: ["sentence_embedding"] },
  );
  return buildOnnxModel({
    name: "tiny-embedding",
    inputs: [
      { name: "input_ids", type: "int64", dims: ["batch_size", "sequence_length"] },
      { name: "attention_mask", type: "int64", dims: ["batch_size", "sequence_length"] },
    ],
    outputs: [
      { name: "last_hidden_state", type: "float32", dims: ["batch_size", "sequence_length", H] },
      { name: "sentence_embedding", type: "float32", dims: ["batch_size", H] },
    ],
    nodes,
    initializers: inits,
  });
}
