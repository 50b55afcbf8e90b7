/**
 * The speech engine loads an int8 export's quantised convolutions as float ones
 * (graph/float-convs.ts): the graph is made beside the model on the first load, reused on the
 * next, the start-up description says so, and the audio is what the model makes.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeTinyKokoro, SAMPLES_PER_TOKEN, STYLE_DIM } from "../../../test/support/tiny-kokoro";
import { SpeechEngine } from "./engine";

const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-speech-convs-"));
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

test("an int8 graph's convolutions run as float ones, made once and reused", async () => {
  const dir = writeTinyKokoro(modelsDir, { quantisedConv: true });
  const first = await SpeechEngine.load(dir, "cpu");
  try {
    expect(first.describe().float_convs).toBe("made (1 float convolutions)");
    expect(existsSync(join(dir, "onnx", "model.float-convs-2d.onnx"))).toBe(true);
    const job = { ids: [50, 51, 52], style: first.voices.style(["af_sky"], 3), speed: 1 };
    const wave = await first.synthesize(job);
    expect(wave.length).toBe(STYLE_DIM + (3 + 2) * SAMPLES_PER_TOKEN);
    expect([...wave.subarray(0, STYLE_DIM)]).toEqual([...job.style]);
  } finally {
    await first.close();
  }
  const second = await SpeechEngine.load(dir, "cpu");
  expect(second.describe().float_convs).toBe("reused");
  await second.close();
});

test("a graph without quantised convolutions is loaded as it is", async () => {
  const dir = writeTinyKokoro(join(modelsDir, "plain"));
  const engine = await SpeechEngine.load(dir, "cpu");
  expect(engine.describe().float_convs).toBeUndefined();
  expect(existsSync(join(dir, "onnx", "model.float-convs-2d.onnx"))).toBe(false);
  await engine.close();
});
