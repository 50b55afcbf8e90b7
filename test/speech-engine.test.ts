/**
 * The voice-82m engine on a tiny Kokoro-signature model, without HTTP: the worker-thread runner
 * and the inline runner give identical waveforms, the worker keeps the event loop free while a
 * chunk runs (ONNX Runtime's run is synchronous on its thread), and close() ends the worker.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeTinyKokoro, SAMPLES_PER_TOKEN, STYLE_DIM } from "./support/tiny-kokoro";
import { SpeechEngine } from "../src/engines/speech/engine";

let modelsDir: string;
let dir: string;

beforeAll(() => {
  modelsDir = mkdtempSync(join(tmpdir(), "switchyard-speech-engine-"));
  dir = writeTinyKokoro(modelsDir, { work: 8 });
});
afterAll(() => rmSync(modelsDir, { recursive: true, force: true }));

describe("speech engine", () => {
  test("worker and inline runners agree; the waveform has the model's shape", async () => {
    const worker = await SpeechEngine.load(dir, "cpu", { thread: "worker" });
    const inline = await SpeechEngine.load(dir, "cpu", { thread: "inline" });
    try {
      expect(worker.describe().thread).toBe("worker");
      expect(inline.describe().thread).toBe("main");
      expect(worker.describe().inputs).toEqual([
        { name: "input_ids", type: "int64", shape: [1, "sequence_length"] },
        { name: "style", type: "float32", shape: [1, 256] },
        { name: "speed", type: "float32", shape: [1] },
      ]);
      const job = { ids: [50, 51, 52, 16, 60], style: worker.voices.style(["af_sky"], 5), speed: 0.5 };
      const a = await worker.synthesize(job);
      const b = await inline.synthesize(job);
      expect(a.length).toBe(STYLE_DIM + ((5 + 2) * SAMPLES_PER_TOKEN) / 0.5);
      expect([...a]).toEqual([...b]);
      expect((await worker.synthesize({ ...job, ids: [] })).length).toBe(0);
    } finally {
      await worker.close();
      await inline.close();
    }
  });

  test("with the worker, timers fire while a chunk is being synthesised", async () => {
    const engine = await SpeechEngine.load(dir, "cpu");
    try {
      const job = { ids: Array(500).fill(50), style: engine.voices.style(["af_heart"], 500), speed: 1 };
      await engine.synthesize(job); // warm-up
      const events: string[] = [];
      const run = engine.synthesize(job).then(() => events.push("synthesised"));
      await Bun.sleep(1);
      events.push("timer");
      await run;
      expect(events).toEqual(["timer", "synthesised"]);
    } finally {
      await engine.close();
    }
  });

  test("after close, jobs are refused", async () => {
    const engine = await SpeechEngine.load(dir, "cpu");
    await engine.close();
    await expect(engine.synthesize({ ids: [50], style: new Float32Array(256), speed: 1 })).rejects.toThrow();
  });
});
