import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as Ort from "onnxruntime-node";
import { loadVocab } from "./engine";
import { resolveIo } from "./model";

const meta = (name: string, type: string): Ort.InferenceSession.ValueMetadata =>
  ({ name, isTensor: true, type, shape: [] }) as unknown as Ort.InferenceSession.ValueMetadata;

function session(inputs: [string, string][], outputs: string[]) {
  return { inputNames: inputs.map(([n]) => n), outputNames: outputs, inputMetadata: inputs.map(([n, t]) => meta(n, t)) };
}

describe("resolveIo: names and types differ between Kokoro exports", () => {
  test.each([
    ["onnx-community", session([["input_ids", "int64"], ["style", "float32"], ["speed", "float32"]], ["waveform"]), { ids: "input_ids", idsType: "int64", style: "style", speed: "speed", speedType: "float32", output: "waveform" }],
    ["kokoro-onnx", session([["tokens", "int64"], ["style", "float32"], ["speed", "float32"]], ["audio"]), { ids: "tokens", idsType: "int64", style: "style", speed: "speed", speedType: "float32", output: "audio" }],
    ["int32 ids, int speed, outputs listed oddly", session([["speed", "int32"], ["ref_s", "float32"], ["input_ids", "int32"]], ["durations", "waveform"]), { ids: "input_ids", idsType: "int32", style: "ref_s", speed: "speed", speedType: "int32", output: "waveform" }],
    ["no speed input", session([["input_ids", "int64"], ["style", "float32"]], ["out"]), { ids: "input_ids", idsType: "int64", style: "style", speed: null, speedType: "float32", output: "out" }],
  ])("%s", (_name, s, expected) => expect(resolveIo(s)).toEqual(expected as ReturnType<typeof resolveIo>));

  test("a model without a style input is refused", () => {
    expect(() => resolveIo(session([["input_ids", "int64"]], ["waveform"]))).toThrow(/style/);
  });
});

describe("loadVocab", () => {
  test("config.json first, then tokenizer.json, then the built-in table", () => {
    const dir = mkdtempSync(join(tmpdir(), "vocab-"));
    try {
      expect(loadVocab(dir).source).toMatch(/built-in/);
      expect(loadVocab(dir).vocab.get("ɹ")).toBe(123);
      writeFileSync(join(dir, "tokenizer.json"), JSON.stringify({ model: { vocab: { $: 0, a: 5 } } }));
      expect(loadVocab(dir)).toEqual({ vocab: new Map([["a", 5]]), source: "tokenizer.json" });
      writeFileSync(join(dir, "config.json"), JSON.stringify({ vocab: { b: 7 } }));
      expect(loadVocab(dir)).toEqual({ vocab: new Map([["b", 7]]), source: "config.json" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
