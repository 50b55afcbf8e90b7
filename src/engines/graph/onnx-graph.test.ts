import { expect, test } from "bun:test";
import { onnx } from "onnx-proto";
import { buildOnnxModel, buildTinyEmbeddingModel } from "../../../test/support/onnx-builder";
import { buildTinyKokoroModel } from "../../../test/support/tiny-kokoro";
import { attributeInts, floatAttributeBytes, floatInitializerBytes, importOpset, intAttributeBytes, nodeBytes, readModel, writeModel } from "./onnx-graph";
import { Writer } from "./protobuf";

const decode = (bytes: Uint8Array) => onnx.ModelProto.toObject(onnx.ModelProto.decode(bytes), { longs: Number, bytes: Array, defaults: false });

test("a model read and written back unchanged decodes to the same model", () => {
  for (const bytes of [buildTinyEmbeddingModel({ vocabSize: 50, hidden: 8, layers: 1, denseHead: 4 }), buildTinyKokoroModel(1, 12, true)]) {
    const g = readModel(bytes);
    expect(g.nodes.length).toBeGreaterThan(10);
    expect(decode(writeModel(g))).toEqual(decode(bytes));
  }
});

test("nodes, initializers and attributes are read as written", () => {
  const g = readModel(buildTinyKokoroModel(0, undefined, true));
  const conv = g.nodes.find((n) => n.opType === "ConvInteger")!;
  expect(conv.inputs).toEqual(["style_q", "conv_w", "style_zp"]);
  expect(conv.outputs).toEqual(["conv_int"]);
  expect(g.nodes.find((n) => n.outputs[0] === "conv_f")!.ints.get("to")).toBe(1);
  const w = g.initializers.find((t) => t.name === "conv_w")!;
  expect([w.dataType, w.dims, w.raw!.length, w.external]).toEqual([2, [2, 256, 1], 512, false]);
  expect(g.outputs).toEqual(["waveform"]);
});

test("new nodes and float initializers decode as onnx.proto says", () => {
  const attr = new Writer().string(1, "group").int(20, 2).int(3, 1).finish();
  const node = onnx.NodeProto.decode(nodeBytes({ name: "n", opType: "Conv", inputs: ["x", "w", ""], outputs: ["y"], attributes: [attr] }));
  expect(onnx.NodeProto.toObject(node, { longs: Number })).toEqual({ input: ["x", "w", ""], output: ["y"], name: "n", opType: "Conv", attribute: [{ name: "group", type: 2, i: 1 }] });
  const t = onnx.TensorProto.decode(floatInitializerBytes("w", [2, 1], Float32Array.of(0.5, -3)));
  expect([t.name, t.dims.map(Number), t.dataType]).toEqual(["w", [2, 1], 1]);
  expect(Array.from(new Float32Array(Uint8Array.from(t.rawData).buffer))).toEqual([0.5, -3]);
});

test("negative integers (axis −1, written as 10-byte varints) read as themselves; new int, float attributes and opset imports decode", () => {
  const bytes = buildOnnxModel({
    inputs: [{ name: "x", type: "float32", dims: [2, 3] }],
    outputs: [{ name: "y", type: "float32", dims: [2, 3] }],
    nodes: [{ op: "Softmax", inputs: ["x"], outputs: ["s"], attrs: { axis: -1 } }, { op: "Transpose", inputs: ["s"], outputs: ["y"], attrs: { perm: [-1, 0] } }],
  });
  const g = readModel(bytes);
  expect(g.nodes[0]!.ints.get("axis")).toBe(-1);
  expect(attributeInts(g.nodes[1]!.attributes.get("perm")!)).toEqual([-1, 0]);
  const n = onnx.NodeProto.decode(nodeBytes({ name: "m", opType: "FusedMatMul", domain: "com.microsoft", inputs: ["a", "b"], outputs: ["c"], attributes: [intAttributeBytes("transB", 1), floatAttributeBytes("alpha", 0.25), intAttributeBytes("axis", -1)] }));
  expect(onnx.NodeProto.toObject(n, { longs: Number }).attribute).toEqual([{ name: "transB", type: 2, i: 1 }, { name: "alpha", type: 1, f: 0.25 }, { name: "axis", type: 2, i: -1 }]);
  importOpset(g, "com.microsoft", 1);
  importOpset(g, "com.microsoft", 1);
  expect(decode(writeModel(g)).opsetImport).toEqual([{ domain: "", version: 17 }, { domain: "com.microsoft", version: 1 }]);
});
