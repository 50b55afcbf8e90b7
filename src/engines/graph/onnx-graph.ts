/**
 * An ONNX model's graph, read just far enough to find and replace nodes (graph/protobuf.ts):
 * nodes with their op, inputs, outputs and attributes, initializers with their type, shape and
 * data, and the bytes of everything else, which `writeModel` copies unchanged. Field numbers are
 * those of onnx.proto (ModelProto.graph = 7; GraphProto.node = 1, initializer = 5, input = 11,
 * value_info = 13; NodeProto, AttributeProto and TensorProto as named below).
 */
import { BYTES, type Field, readFields, text, integers, Writer, ProtobufError } from "./protobuf";

export const FLOAT = 1;
export const UINT8 = 2;
export const INT8 = 3;
export const INT64 = 7;
/** AttributeProto.type FLOAT, INT and INTS. */
const ATTRIBUTE_FLOAT = 1;
const ATTRIBUTE_INT = 2;
const ATTRIBUTE_INTS = 7;

export interface GraphNode {
  /** The node's own bytes (its payload inside the graph), to copy it unchanged. */
  bytes: Uint8Array;
  name: string;
  opType: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  /** Each attribute's own bytes by name, to copy them to another node. */
  attributes: Map<string, Uint8Array>;
  /** Integer attributes (AttributeProto.i) by name. */
  ints: Map<string, number>;
  /** Whether an attribute holds a subgraph (If, Loop, Scan): its inner nodes read outer values by name. */
  hasSubgraph: boolean;
}

export interface Initializer {
  bytes: Uint8Array;
  name: string;
  dims: number[];
  dataType: number;
  /** raw_data when present (little-endian), else null. */
  raw: Uint8Array | null;
  /** int32_data / float_data when raw_data is absent (uint8 and int8 go in int32_data). */
  int32: number[];
  float32: number[];
  /** data_location EXTERNAL: the values are in another file. */
  external: boolean;
}

export interface OnnxGraph {
  nodes: GraphNode[];
  initializers: Initializer[];
  /** Graph inputs and value_info entries by name, as their bytes (field 11 and 13). */
  inputs: { name: string; bytes: Uint8Array }[];
  valueInfo: { name: string; bytes: Uint8Array }[];
  outputs: string[];
  /** Graph fields this module does not edit, in order, as their whole field bytes. */
  other: Uint8Array[];
  /** Model fields other than the graph, as their whole field bytes. */
  modelOther: Uint8Array[];
}

const payload = (buf: Uint8Array, f: Field) => buf.subarray(f.from, f.to);
const strings = (buf: Uint8Array, fields: Field[], no: number) => fields.filter((f) => f.no === no && f.wire === BYTES).map((f) => text(buf, f));
const one = (buf: Uint8Array, fields: Field[], no: number) => {
  const f = fields.findLast((x) => x.no === no && x.wire === BYTES);
  return f ? text(buf, f) : "";
};

function readNode(buf: Uint8Array, f: Field): GraphNode {
  const fields = readFields(buf, f.from, f.to);
  const attributes = new Map<string, Uint8Array>();
  const ints = new Map<string, number>();
  let hasSubgraph = false;
  for (const a of fields) {
    if (a.no !== 5 || a.wire !== BYTES) continue;
    const af = readFields(buf, a.from, a.to);
    const name = one(buf, af, 1);
    attributes.set(name, payload(buf, a));
    const i = af.findLast((x) => x.no === 3);
    if (i) ints.set(name, integers(buf, [i], 3)[0]!);
    if (af.some((x) => x.no === 6 || x.no === 11)) hasSubgraph = true;
  }
  return { bytes: payload(buf, f), name: one(buf, fields, 3), opType: one(buf, fields, 4), domain: one(buf, fields, 7), inputs: strings(buf, fields, 1), outputs: strings(buf, fields, 2), attributes, ints, hasSubgraph };
}

function readInitializer(buf: Uint8Array, f: Field): Initializer {
  const fields = readFields(buf, f.from, f.to);
  const raw = fields.findLast((x) => x.no === 9 && x.wire === BYTES);
  const float32: number[] = [];
  for (const x of fields) {
    if (x.no !== 4) continue;
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    if (x.wire === BYTES) for (let at = x.from; at + 4 <= x.to; at += 4) float32.push(view.getFloat32(at, true));
    else float32.push(view.getFloat32(x.from, true));
  }
  return {
    bytes: payload(buf, f),
    name: one(buf, fields, 8),
    dims: integers(buf, fields, 1),
    dataType: integers(buf, fields, 2)[0] ?? 0,
    raw: raw ? payload(buf, raw) : null,
    int32: integers(buf, fields, 5),
    float32,
    external: integers(buf, fields, 14)[0] === 1,
  };
}

/** Reads a model's graph; throws ProtobufError when the bytes are not a model with a graph. */
export function readModel(buf: Uint8Array): OnnxGraph {
  const modelFields = readFields(buf);
  const graphField = modelFields.findLast((f) => f.no === 7 && f.wire === BYTES);
  if (!graphField) throw new ProtobufError("no graph in the model");
  const g: OnnxGraph = { nodes: [], initializers: [], inputs: [], valueInfo: [], outputs: [], other: [], modelOther: modelFields.filter((f) => f !== graphField).map((f) => buf.subarray(f.start, f.end)) };
  for (const f of readFields(buf, graphField.from, graphField.to)) {
    if (f.wire === BYTES && f.no === 1) g.nodes.push(readNode(buf, f));
    else if (f.wire === BYTES && f.no === 5) g.initializers.push(readInitializer(buf, f));
    else if (f.wire === BYTES && (f.no === 11 || f.no === 13)) {
      const entry = { name: one(buf, readFields(buf, f.from, f.to), 1), bytes: payload(buf, f) };
      (f.no === 11 ? g.inputs : g.valueInfo).push(entry);
    } else {
      if (f.wire === BYTES && f.no === 12) g.outputs.push(one(buf, readFields(buf, f.from, f.to), 1));
      g.other.push(buf.subarray(f.start, f.end));
    }
  }
  return g;
}

/** A new node's bytes: op, inputs, outputs, name, and attributes copied from another node. */
export function nodeBytes(n: { name: string; opType: string; domain?: string; inputs: string[]; outputs: string[]; attributes: Iterable<Uint8Array> }): Uint8Array {
  const w = new Writer();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  w.string(3, n.name).string(4, n.opType);
  for (const a of n.attributes) w.bytes(5, a);
  if (n.domain) w.string(7, n.domain);
  return w.finish();
}

/** An initializer's bytes: dims, data type, name and its little-endian values as raw_data. */
function rawInitializerBytes(name: string, dims: readonly number[], dataType: number, le: Uint8Array): Uint8Array {
  const w = new Writer();
  for (const d of dims) w.int(1, d);
  w.int(2, dataType).string(8, name);
  return w.bytes(9, le).finish();
}

/** A float32 initializer's bytes (raw_data, little-endian). */
export function floatInitializerBytes(name: string, dims: readonly number[], values: Float32Array): Uint8Array {
  const le = new Uint8Array(values.length * 4);
  const view = new DataView(le.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
  return rawInitializerBytes(name, dims, FLOAT, le);
}

/** A new initializer as `g.initializers` holds it: its bytes, and what is read from them. */
function newInitializer(name: string, dims: readonly number[], dataType: number, bytes: Uint8Array): Initializer {
  return { bytes, name, dims: [...dims], dataType, raw: null, int32: [], float32: [], external: false };
}

/** A new float32 initializer (raw_data, little-endian). */
export function floatInitializer(name: string, dims: readonly number[], values: Float32Array): Initializer {
  return newInitializer(name, dims, FLOAT, floatInitializerBytes(name, dims, values));
}

/** A new int64 initializer (raw_data, little-endian). */
export function int64Initializer(name: string, dims: readonly number[], values: readonly number[]): Initializer {
  return newInitializer(name, dims, INT64, int64InitializerBytes(name, dims, values));
}

function int64InitializerBytes(name: string, dims: readonly number[], values: readonly number[]): Uint8Array {
  const le = new Uint8Array(values.length * 8);
  const view = new DataView(le.buffer);
  values.forEach((v, i) => view.setBigInt64(i * 8, BigInt(v), true));
  return rawInitializerBytes(name, dims, INT64, le);
}

/** The integers of an attribute (AttributeProto.ints), from its bytes. */
export function attributeInts(bytes: Uint8Array): number[] {
  return integers(bytes, readFields(bytes), 8);
}

/** A list-of-integers attribute's bytes (non-negative values: kernel shapes, pads, strides). */
export function intsAttributeBytes(name: string, values: readonly number[]): Uint8Array {
  const w = new Writer().string(1, name);
  for (const v of values) w.int(8, v);
  return w.int(20, ATTRIBUTE_INTS).finish();
}

/** An integer attribute's bytes. */
export function intAttributeBytes(name: string, value: number): Uint8Array {
  return new Writer().string(1, name).int(3, value).int(20, ATTRIBUTE_INT).finish();
}

/** A float attribute's bytes. */
export function floatAttributeBytes(name: string, value: number): Uint8Array {
  return new Writer().string(1, name).float32(2, value).int(20, ATTRIBUTE_FLOAT).finish();
}

/**
 * Adds an opset import for `domain` (ModelProto.opset_import = 8: domain = 1, version = 2) unless
 * the model has one: a node of a domain the model does not import is refused at load.
 */
export function importOpset(g: OnnxGraph, domain: string, version: number): void {
  for (const f of g.modelOther) {
    const [field] = readFields(f);
    if (field?.no === 8 && field.wire === BYTES && one(f, readFields(f, field.from, field.to), 1) === domain) return;
  }
  g.modelOther.push(new Writer().bytes(8, new Writer().string(1, domain).int(2, version).finish()).finish());
}

/**
 * The model's bytes with the graph's nodes, initializers, inputs and value_info as `g` now holds
 * them (other graph fields and every model field as they were). Graph fields are written in
 * onnx.proto's order: nodes, the fields kept, initializers, inputs, value_info.
 */
export function writeModel(g: OnnxGraph): Uint8Array {
  const graph = new Writer();
  for (const n of g.nodes) graph.bytes(1, n.bytes);
  for (const o of g.other) graph.raw(o);
  for (const i of g.initializers) graph.bytes(5, i.bytes);
  for (const i of g.inputs) graph.bytes(11, i.bytes);
  for (const v of g.valueInfo) graph.bytes(13, v.bytes);
  const model = new Writer();
  for (const f of g.modelOther) model.raw(f);
  return model.bytes(7, graph.finish()).finish();
}
