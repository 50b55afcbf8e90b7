/**
 * Dynamically quantised convolutions made float again. ONNX Runtime's dynamic quantisation
 * (what Kokoro-82M's int8 export is) turns each Conv into
 *
 *   DynamicQuantizeLinear(x) → ConvInteger(x_q, W_q, x_zp, W_zp) [→ Add(bias_q)] → Cast → Mul(x_scale·W_scale)
 *
 * and ONNX Runtime 1.30's CPU ConvInteger is slow: on Kokoro it was 83% of the kernel time, and
 * the model cost 1.9 CPU seconds per second of audio where ORT 1.32's kernel costs 0.85 (Python,
 * same graph and ids). This rewrites each such chain as one float Conv(x, (W_q − W_zp)·W_scale,
 * bias): the weights are stored as float32 (four times their int8 size) and the activations are
 * no longer quantised, which is closer to the model before quantisation, not further; MatMuls keep
 * their int8 kernels (fast in 1.30). On Kokoro, ORT 1.30: 0.75 CPU s per audio s with the
 * server's session options, against 1.08 for the int8 graph (test/bench/embeddings-ceiling.bench.ts
 * prints both beside bare ORT). A chain that differs in any way from the pattern is left as it is.
 *
 * A one-dimensional convolution is written as a two-dimensional one of height 1 between an
 * Unsqueeze and a Squeeze: ORT's CPU provider runs 2-D float convolutions in its blocked NCHWc
 * layout (its level "all" optimisations), not 1-D ones, and on Kokoro that took another 4–8% off
 * the CPU per audio second (0.655 → 0.603, Python ORT 1.32, same chunks; outputs within 30 dB SNR
 * of the 1-D graph's, the difference of float summation orders through the vocoder).
 */
import { FLOAT, INT8, UINT8, attributeInts, floatInitializer, int64Initializer, intsAttributeBytes, nodeBytes, readModel, writeModel, type GraphNode, type Initializer, type OnnxGraph } from "./onnx-graph";

export interface FloatConvResult {
  /** The rewritten model, or null when no chain matched (nothing to gain). */
  model: Uint8Array | null;
  /** How many ConvInteger chains became float Convs, and how many were left. */
  replaced: number;
  left: number;
}

/** The values of an integer or float initializer, or null when they are not in the file. */
function values(t: Initializer): Float64Array | null {
  if (t.external) return null;
  const n = t.dims.reduce((a, b) => a * b, 1);
  let out: Float64Array;
  if (t.raw) {
    const view = new DataView(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength);
    const size = t.dataType === FLOAT ? 4 : t.dataType === UINT8 || t.dataType === INT8 ? 1 : 0;
    if (size === 0 || t.raw.length !== n * size) return null;
    out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = t.dataType === FLOAT ? view.getFloat32(i * 4, true) : t.dataType === UINT8 ? view.getUint8(i) : view.getInt8(i);
  } else {
    const src = t.dataType === FLOAT ? t.float32 : t.int32;
    if (src.length !== n || ![FLOAT, UINT8, INT8].includes(t.dataType)) return null;
    out = Float64Array.from(src);
  }
  return out;
}

interface Chain {
  conv: GraphNode;
  /** The nodes the float Conv replaces (ConvInteger, [Add,] Cast, Mul). */
  replaced: GraphNode[];
  input: string;
  output: string;
  weights: Float32Array;
  weightDims: number[];
  bias: string | null;
}

export function floatConvs(modelBytes: Uint8Array): FloatConvResult {
  const g = readModel(modelBytes);
  const producer = new Map<string, GraphNode>();
  const consumers = new Map<string, GraphNode[]>();
  for (const n of g.nodes) {
    for (const o of n.outputs) producer.set(o, n);
    for (const i of n.inputs) if (i) (consumers.get(i) ?? consumers.set(i, []).get(i)!).push(n);
  }
  const inits = new Map(g.initializers.map((t) => [t.name, t]));
  const graphOutputs = new Set(g.outputs);
  /** The single node reading `value`, when exactly one does and it is not a graph output. */
  const onlyReader = (value: string, op: string): GraphNode | null => {
    const c = consumers.get(value) ?? [];
    return c.length === 1 && c[0]!.opType === op && c[0]!.domain === "" && !graphOutputs.has(value) ? c[0]! : null;
  };
  const other = (n: GraphNode, known: string) => (n.inputs.length === 2 && n.inputs.includes(known) ? n.inputs[n.inputs[0] === known ? 1 : 0]! : null);

  const match = (conv: GraphNode): Chain | null => {
    const [xq, wName, xzp, wzpName] = conv.inputs;
    const dql = xq ? producer.get(xq) : undefined;
    if (!dql || dql.opType !== "DynamicQuantizeLinear" || dql.outputs[0] !== xq || (xzp && xzp !== dql.outputs[2])) return null;
    const wq = wName ? inits.get(wName) : undefined;
    const wzp = wzpName ? inits.get(wzpName) : undefined;
    if (!wq || (wq.dataType !== UINT8 && wq.dataType !== INT8) || wq.dims.length < 3 || (wzpName && !wzp)) return null;
    const add = onlyReader(conv.outputs[0]!, "Add");
    const biasQ = add ? other(add, conv.outputs[0]!) : null;
    const cast = onlyReader((add ?? conv).outputs[0]!, "Cast");
    if (!cast || cast.ints.get("to") !== FLOAT) return null;
    const mul = onlyReader(cast.outputs[0]!, "Mul");
    const scale = mul ? other(mul, cast.outputs[0]!) : null;
    const scaleMul = scale ? producer.get(scale) : undefined;
    if (!mul || !scaleMul || scaleMul.opType !== "Mul") return null;
    const wScaleName = other(scaleMul, dql.outputs[1]!);
    const wScale = wScaleName ? inits.get(wScaleName) : undefined;
    // The bias: bias_q = Reshape(Cast(Floor(Div(bias, scale)))), the float bias being an initializer.
    let bias: string | null = null;
    if (add) {
      let n = biasQ ? producer.get(biasQ) : undefined;
      for (const op of ["Reshape", "Cast", "Floor"]) n = n?.opType === op ? producer.get(n.inputs[0]!) : undefined;
      const b = n?.opType === "Div" && n.inputs[1] === scale ? inits.get(n.inputs[0]!) : undefined;
      if (!b || b.dataType !== FLOAT || b.dims.length !== 1 || b.dims[0] !== wq.dims[0] || !values(b)) return null;
      bias = b.name;
    }
    const m = wq.dims[0]!;
    const w = values(wq);
    const s = wScale && wScale.dataType === FLOAT ? values(wScale) : null;
    const zp = wzp ? values(wzp) : Float64Array.of(0);
    if (!w || !s || !zp || (s.length !== 1 && s.length !== m) || (zp.length !== 1 && zp.length !== m)) return null;
    const per = w.length / m;
    const weights = new Float32Array(w.length);
    for (let i = 0; i < w.length; i++) {
      const ch = Math.floor(i / per);
      weights[i] = (w[i]! - zp[zp.length === 1 ? 0 : ch]!) * s[s.length === 1 ? 0 : ch]!;
    }
    return { conv, replaced: [conv, ...(add ? [add] : []), cast, mul], input: dql.inputs[0]!, output: mul.outputs[0]!, weights, weightDims: wq.dims, bias };
  };

  const chains: Chain[] = [];
  let left = 0;
  for (const n of g.nodes) {
    if (n.opType !== "ConvInteger" || n.domain !== "") continue;
    const c = match(n);
    if (c) chains.push(c);
    else left++;
  }
  if (chains.length === 0) return { model: null, replaced: 0, left };

  const gone = new Set<GraphNode>(chains.flatMap((c) => c.replaced));
  const floatConv = new Map<GraphNode, GraphNode[]>();
  const taken = new Set([...g.initializers.map((t) => t.name), ...g.inputs.map((i) => i.name), ...g.nodes.flatMap((n) => n.outputs)]);
  const fresh = (name: string) => {
    while (taken.has(name)) name += "_";
    taken.add(name);
    return name;
  };
  let heightAxis: string | null = null;
  for (const c of chains) {
    const wName = fresh(`${c.conv.inputs[1]}_float`);
    const as2d = c.weightDims.length === 3 ? attributes2d(c.conv.attributes) : null;
    const dims = as2d ? [c.weightDims[0]!, c.weightDims[1]!, 1, c.weightDims[2]!] : c.weightDims;
    g.initializers.push(floatInitializer(wName, dims, c.weights));
    const weightsAndBias = [wName, ...(c.bias ? [c.bias] : [])];
    if (!as2d) {
      floatConv.set(c.conv, [graphNode(`${c.conv.name}_float`, "Conv", [c.input, ...weightsAndBias], [c.output], c.conv.attributes)]);
      continue;
    }
    if (!heightAxis) {
      heightAxis = fresh("float_convs_height_axis");
      g.initializers.push(int64Initializer(heightAxis, [1], [2]));
    }
    const x4 = fresh(`${c.output}_2d_input`);
    const y4 = fresh(`${c.output}_2d_output`);
    floatConv.set(c.conv, [
      graphNode(`${c.conv.name}_to_2d`, "Unsqueeze", [c.input, heightAxis], [x4]),
      graphNode(`${c.conv.name}_float`, "Conv", [x4, ...weightsAndBias], [y4], as2d),
      graphNode(`${c.conv.name}_to_1d`, "Squeeze", [y4, heightAxis], [c.output]),
    ]);
  }
  // Each float Conv takes its ConvInteger's place: its inputs are ready by then.
  g.nodes = g.nodes.flatMap((n) => floatConv.get(n) ?? (gone.has(n) ? [] : [n]));
  prune(g);
  return { model: writeModel(g), replaced: chains.length, left };
}

function graphNode(name: string, opType: string, inputs: string[], outputs: string[], attributes = new Map<string, Uint8Array>()): GraphNode {
  const bytes = nodeBytes({ name, opType, inputs, outputs, attributes: attributes.values() });
  return { name, opType, domain: "", inputs, outputs, bytes, attributes, ints: new Map(), hasSubgraph: false };
}

/**
 * A 1-D convolution's attributes for the same convolution over [N, C, 1, L]: height 1, no
 * padding, stride or dilation across it. Null when an attribute is not one this knows (the
 * convolution then stays 1-D).
 */
function attributes2d(attributes: ReadonlyMap<string, Uint8Array>): Map<string, Uint8Array> | null {
  const out = new Map<string, Uint8Array>();
  for (const [name, bytes] of attributes) {
    // auto_pad means the same over a height of 1 with a kernel height of 1.
    if (name === "group" || name === "auto_pad") out.set(name, bytes);
    else if (name === "kernel_shape" || name === "strides" || name === "dilations") {
      const v = attributeInts(bytes);
      if (v.length !== 1 || v[0]! < 1) return null;
      out.set(name, intsAttributeBytes(name, [1, v[0]!]));
    } else if (name === "pads") {
      const v = attributeInts(bytes);
      if (v.length !== 2 || v.some((p) => p < 0)) return null;
      out.set(name, intsAttributeBytes(name, [0, v[0]!, 0, v[1]!]));
    } else return null;
  }
  return out;
}

/**
 * Drops what nothing reads any more: nodes whose outputs are all unused (the quantisers and the
 * bias arithmetic of the replaced chains), then unused initializers with their graph-input
 * entries, and value_info of values no longer made. A graph with subgraphs (whose nodes may read
 * outer values by name) keeps its nodes.
 */
function prune(g: OnnxGraph): void {
  const outputs = new Set(g.outputs);
  if (!g.nodes.some((n) => n.hasSubgraph)) {
    for (let changed = true; changed; ) {
      const used = new Set(outputs);
      for (const n of g.nodes) for (const i of n.inputs) used.add(i);
      const kept = g.nodes.filter((n) => n.outputs.some((o) => o && used.has(o)));
      changed = kept.length !== g.nodes.length;
      g.nodes = kept;
    }
  }
  const used = new Set(outputs);
  for (const n of g.nodes) for (const i of n.inputs) used.add(i);
  const dropped = new Set(g.initializers.filter((t) => !used.has(t.name)).map((t) => t.name));
  g.initializers = g.initializers.filter((t) => !dropped.has(t.name));
  g.inputs = g.inputs.filter((i) => !dropped.has(i.name));
  const made = new Set([...g.initializers.map((t) => t.name), ...g.inputs.map((i) => i.name)]);
  for (const n of g.nodes) for (const o of n.outputs) made.add(o);
  g.valueInfo = g.valueInfo.filter((v) => made.has(v.name));
}
