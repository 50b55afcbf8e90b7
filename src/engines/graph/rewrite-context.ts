/**
 * What the graph rewrites (transformer-fusions.ts, rotary-fusion.ts) ask of a graph: who makes and
 * who reads each value, its constants, fresh names, and the replacements made so far, applied in
 * the graph's order by `rewritten`.
 */
import { nodeBytes, FLOAT, INT64, type GraphNode, type Initializer, type OnnxGraph } from "./onnx-graph";

/** ONNX Runtime's contrib operators' domain (FastGelu, FusedMatMul, RotaryEmbedding). */
export const CONTRIB = "com.microsoft";

export const near = (x: number | null, want: number) => x !== null && Math.abs(x - want) <= 1e-6 * Math.max(1, Math.abs(want));

/** A float32 value of an initializer holding exactly one (any rank), else null. */
export function scalarOf(t: Initializer | undefined): number | null {
  if (!t || t.external || t.dataType !== FLOAT || t.dims.reduce((a, b) => a * b, 1) !== 1) return null;
  if (t.raw) return t.raw.length === 4 ? new DataView(t.raw.buffer, t.raw.byteOffset, 4).getFloat32(0, true) : null;
  return t.float32.length === 1 ? t.float32[0]! : null;
}

/** An int64 initializer's values when they are in the file, else null. */
export function int64sOf(t: Initializer | undefined): number[] | null {
  if (!t || t.external || t.dataType !== INT64 || !t.raw || t.raw.length % 8 !== 0) return null;
  const view = new DataView(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength);
  return Array.from({ length: t.raw.length / 8 }, (_, i) => Number(view.getBigInt64(i * 8, true)));
}

/** A new node (its bytes, and what the rewrites read of it). */
export function node(name: string, opType: string, domain: string, inputs: string[], outputs: string[], attributes: Uint8Array[]): GraphNode {
  const bytes = nodeBytes({ name, opType, domain, inputs, outputs, attributes });
  return { bytes, name, opType, domain, inputs, outputs, attributes: new Map(), ints: new Map(), hasSubgraph: false };
}

export type RewriteContext = ReturnType<typeof rewriteContext>;

export function rewriteContext(g: OnnxGraph) {
  const producer = new Map<string, GraphNode>();
  const readers = new Map<string, GraphNode[]>();
  for (const n of g.nodes) {
    for (const o of n.outputs) producer.set(o, n);
    for (const i of n.inputs) if (i) (readers.get(i) ?? readers.set(i, []).get(i)!).push(n);
  }
  // A node inside a subgraph (If, Loop, Scan) may read any outer value: none is taken as read once.
  const subgraphs = g.nodes.some((n) => n.hasSubgraph);
  const inits = new Map(g.initializers.map((t) => [t.name, t]));
  const graphOutputs = new Set(g.outputs);
  const names = new Set([...g.nodes.map((n) => n.name), ...g.initializers.map((t) => t.name), ...producer.keys()]);
  const removed = new Set<GraphNode>();
  /** Nodes that take another's place in the graph's order (several: those its replacement needs first). */
  const replacements = new Map<GraphNode, GraphNode[]>();
  const made = (n: GraphNode | undefined, op: string): n is GraphNode => n?.opType === op && n.domain === "";
  /** The node that reads `value`, when it is the only reader, of op `op`, and `value` is not a graph output. */
  const soleReader = (value: string, op: string): GraphNode | null => {
    const r = readers.get(value) ?? [];
    return !subgraphs && r.length === 1 && made(r[0], op) && !graphOutputs.has(value) ? r[0]! : null;
  };
  return {
    g,
    producer,
    inits,
    made,
    soleReader,
    readOnlyBy: (value: string, n: GraphNode) => soleReader(value, n.opType) === n,
    /** For a two-input node with `known` as one input: the other, else null. */
    other: (n: GraphNode, known: string) => (n.inputs.length === 2 && n.inputs.includes(known) ? n.inputs[n.inputs[0] === known ? 1 : 0]! : null),
    /** For a Mul or Add of a value and a scalar initializer: [value, scalar], else null. */
    withScalar(n: GraphNode): [string, number] | null {
      if (n.inputs.length !== 2) return null;
      for (const [v, c] of [[0, 1], [1, 0]] as const) {
        const s = scalarOf(inits.get(n.inputs[c]!));
        if (s !== null && !inits.has(n.inputs[v]!)) return [n.inputs[v]!, s];
      }
      return null;
    },
    fresh(base: string): string {
      let name = base;
      for (let i = 1; names.has(name); i++) name = `${base}_${i}`;
      names.add(name);
      return name;
    },
    /** `nodes` leave the graph; `by` takes the place of `at`, one of them. */
    replace(nodes: GraphNode[], at: GraphNode, ...by: GraphNode[]): void {
      for (const n of nodes) removed.add(n);
      removed.delete(at);
      replacements.set(at, by);
    },
    /** Whether no rewrite has taken any of `nodes` yet. */
    free: (...nodes: GraphNode[]) => nodes.every((n) => !removed.has(n) && !replacements.has(n)),
    /**
     * The graph's nodes with the replacements made; then those of `maybeUnread` whose outputs
     * nothing reads any more (values the replaced nodes read, and they alone) are dropped too.
     */
    rewritten(maybeUnread: readonly GraphNode[] = []): GraphNode[] {
      let nodes = g.nodes.filter((n) => !removed.has(n)).flatMap((n) => replacements.get(n) ?? [n]);
      const candidates = new Set(maybeUnread);
      for (let changed = true; changed; ) {
        const read = new Set(nodes.flatMap((n) => n.inputs));
        const unread = nodes.filter((n) => candidates.has(n) && n.outputs.every((o) => !read.has(o) && !graphOutputs.has(o)));
        changed = unread.length > 0;
        if (changed) nodes = nodes.filter((n) => !unread.includes(n));
      }
      return nodes;
    },
  };
}
