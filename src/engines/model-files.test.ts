import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MODEL_MANIFESTS, manifestFor } from "./model-files";
import { SPEECH_FILES } from "./speech/files";
import { modelFileFor, SpeechEngine } from "./speech/engine";

const providers = ["cpu", "cuda"] as const;

test.each(MODEL_MANIFESTS.flatMap((m) => providers.map((p) => [m.modelId, p, m] as const)))(
  "%s on %s: the model graph is pulled last, so a running server loads only complete sets",
  (_id, provider, manifest) => {
    const files = manifestFor(manifest, provider).files;
    expect(files.at(-1)!.path).toMatch(/^onnx\/model[a-z0-9_]*\.onnx$/);
    // Exactly one graph per provider.
    expect(files.filter((f) => /^onnx\/model[a-z0-9_]*\.onnx$/.test(f.path)).length).toBe(1);
  },
);

test.each([
  ["cpu", "onnx/model_quantized.onnx"],
  ["cuda", "onnx/model.onnx"],
] as const)("voice-82m on %s: pull fetches %s", (provider, graph) => {
  expect(manifestFor(SPEECH_FILES, provider).files.at(-1)!.path).toBe(graph);
});

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function speechDir(graphs: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-speech-files-"));
  dirs.push(dir);
  mkdirSync(join(dir, "onnx"));
  mkdirSync(join(dir, "voices"));
  writeFileSync(join(dir, "voices", "af_heart.bin"), "");
  for (const g of graphs) writeFileSync(join(dir, g), "");
  return dir;
}

test.each([
  // present graphs, provider, chosen
  [["onnx/model.onnx", "onnx/model_quantized.onnx"], "cpu", "onnx/model_quantized.onnx"],
  [["onnx/model.onnx", "onnx/model_quantized.onnx"], "cuda", "onnx/model.onnx"],
  [["onnx/model_fp16.onnx", "onnx/model_quantized.onnx"], "cuda", "onnx/model_fp16.onnx"],
  [["onnx/model.onnx"], "cpu", "onnx/model.onnx"],
  [["onnx/model_quantized.onnx"], "cuda", "onnx/model_quantized.onnx"],
  [[], "cpu", null],
] as const)("voice-82m with %j on %s loads %s", (graphs, provider, chosen) => {
  const dir = speechDir([...graphs]);
  expect(modelFileFor(dir, provider)).toBe(chosen);
  // Any graph is enough for the loader to try.
  expect(SpeechEngine.filesPresent(dir).ok).toBe(chosen !== null);
});

test.each([
  // SWITCHYARD_ONNX_PROVIDER, --provider, chosen
  ["cpu", undefined, "cpu"],
  ["cuda", undefined, "cuda"],
  ["auto", "cuda", "cuda"],
  ["cuda", "cpu", "cpu"],
  ["auto", "gpu", "--provider must be cpu or cuda, got 'gpu'"],
] as const)("models pull with SWITCHYARD_ONNX_PROVIDER=%s and --provider %s pulls for %s", async (setting, flag, chosen) => {
  const { pullProvider } = await import("../cli/models");
  expect(pullProvider({ onnxProvider: setting, runtimeDir: "/nonexistent" }, flag, {})).toBe(chosen);
});

test("the speech engine loads the graph chosen for its provider, and says which", async () => {
  const { renameSync, copyFileSync } = await import("node:fs");
  const { writeTinyKokoro } = await import("../../test/support/tiny-kokoro");
  const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-speech-graph-"));
  dirs.push(modelsDir);
  const dir = writeTinyKokoro(modelsDir);
  copyFileSync(join(dir, "onnx", "model.onnx"), join(dir, "onnx", "model_quantized.onnx"));
  const cpu = await SpeechEngine.load(dir, "cpu");
  expect(cpu.describe().file).toBe("onnx/model_quantized.onnx");
  await cpu.close();
  renameSync(join(dir, "onnx", "model_quantized.onnx"), join(dir, "onnx", "model_fp16.onnx"));
  const fallback = await SpeechEngine.load(dir, "cpu");
  expect(fallback.describe().file).toBe("onnx/model.onnx");
  await fallback.close();
});
