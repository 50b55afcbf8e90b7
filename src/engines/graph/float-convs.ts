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
 */
import { FLOAT, INT8, UINT8, floatInitializerBytes, nodeBytes, readModel, writeModel, type GraphNode, type Initializer, type OnnxGraph } from "./onnx-graph";

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
  const floatConv = new Map<GraphNode, GraphNode>();
  const taken = new Set(g.initializers.map((t) => t.name));
  for (const c of chains) {
    let wName = `${c.conv.inputs[1]}_float`;
    while (taken.has(wName)) wName += "_";
    taken.add(wName);
    const attributes = [...c.conv.attributes.values()];
    const node = { name: `${c.conv.name}_float`, opType: "Conv", inputs: [c.input, wName, ...(c.bias ? [c.bias] : [])], outputs: [c.output], attributes };
    floatConv.set(c.conv, { ...node, domain: "", bytes: nodeBytes(node), attributes: c.conv.attributes, ints: new Map(), hasSubgraph: false });
    g.initializers.push({ bytes: floatInitializerBytes(wName, c.weightDims, c.weights), name: wName, dims: c.weightDims, dataType: FLOAT, raw: null, int32: [], float32: [], external: false });
  }
  // Each float Conv takes its ConvInteger's place: its inputs are ready by then.
  g.nodes = g.nodes.flatMap((n) => (floatConv.has(n) ? [floatConv.get(n)!] : gone.has(n) ? [] : [n]));
  prune(g);
  return { model: writeModel(g), replaced: chains.length, left };
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
