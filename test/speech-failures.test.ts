/**
 * A failed synthesis is never billed: when the first chunk fails the request answers 500 with
 * nothing held; when a later chunk fails mid-stream the transfer is aborted (the client sees a
 * broken stream, not a short file) and the hold is released. A model file that cannot load
 * leaves voice-82m unavailable (503).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Harness } from "./support/harness";
import { writeTinyKokoro } from "./support/tiny-kokoro";
import { postSpeech, startSpeechStack, stopSpeechStack } from "./support/speech-stack";
import { ledgerState, settled } from "./support/ledger-state";
import { planSpeech } from "../src/text/frontend";
import { KOKORO_VOCAB } from "../src/text/kokoro-vocab";
import { SpeechEngine } from "../src/engines/speech/engine";

const FIRST = "Only this first sentence can be spoken. ";
const SECOND = "The second one makes the model fail, as a broken model would.";

let h: Harness;
let modelsDir: string;

beforeAll(async () => {
  const firstTokens = planSpeech(FIRST + SECOND, "us", KOKORO_VOCAB)[0]!.ids.length + 2;
  ({ h, modelsDir } = await startSpeechStack("switchyard-speech-fail-", { onlyTokens: firstTokens }));
});
afterAll(() => stopSpeechStack(h, modelsDir));

function speech(key: string, input: string, format = "wav") {
  return postSpeech(h.base, key, { model: "voice-82m", voice: "af_heart", input, response_format: format });
}

describe("speech failures", () => {
  test("the first chunk fails: 500, nothing billed or held", async () => {
    const a = await h.account(1);
    const before = ledgerState(h, a.id);
    const res = await speech(a.key, SECOND);
    expect(res.status).toBe(500);
    expect((await res.json()).error.code).toBe("internal_error");
    expect(ledgerState(h, a.id)).toEqual(before);
  });

  test("a later chunk fails: the stream aborts and nothing is billed", async () => {
    const a = await h.account(1);
    const before = ledgerState(h, a.id);
    const res = await speech(a.key, FIRST + SECOND);
    expect(res.status).toBe(200);
    const failed = await res.arrayBuffer().then(() => false, () => true);
    expect(failed).toBe(true);
    const after = await settled(h, a.id);
    expect(after).toEqual(before);
  });

  test("the sentence the model can speak works (the failure above is the second chunk's)", async () => {
    const a = await h.account(1);
    const res = await speech(a.key, FIRST.trim() + " ", "pcm");
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  test("a model file that is not ONNX fails to load", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-speech-corrupt-"));
    try {
      const modelDir = writeTinyKokoro(dir);
      writeFileSync(join(modelDir, "onnx", "model.onnx"), "not a model");
      await expect(SpeechEngine.load(modelDir, "cpu")).rejects.toThrow();
      await expect(SpeechEngine.load(modelDir, "cpu", { thread: "inline" })).rejects.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
