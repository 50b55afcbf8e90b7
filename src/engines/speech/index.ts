/**
 * Start-up of voice-82m: loads SWITCHYARD_MODELS_DIR/voice-82m when its files are present and
 * registers the engine, which makes voice-82m and voice-82m-turbo live. While files are missing
 * or fail to load it looks again every few seconds, so weights copied in later go live without a
 * restart (contract §3). Each distinct problem is logged once, not every poll.
 */
import { join } from "node:path";
import type { Services } from "../../services";
import { SpeechEngine, SPEECH_MODEL_ID } from "./engine";

export const POLL_INTERVAL_MS = 5_000;

export function speechModelDir(s: Services): string {
  return join(s.config.modelsDir, SPEECH_MODEL_ID);
}

type Report = (msg: string, fields: Record<string, unknown>, level: "info" | "warn" | "error") => void;

async function tryLoad(s: Services, report: Report): Promise<boolean> {
  const dir = speechModelDir(s);
  const present = SpeechEngine.filesPresent(dir);
  if (!present.ok) {
    report("speech model not loaded: files missing (run `switchyard models pull` or copy them in)", { model: SPEECH_MODEL_ID, dir, missing: present.missing.join(", ") }, "info");
    return false;
  }
  let engine: SpeechEngine;
  try {
    engine = await SpeechEngine.load(dir, s.config.onnxProvider, {
      metrics: s.metrics,
      onSkip: (file, why) => s.log.warn("voice pack skipped", { model: SPEECH_MODEL_ID, file, reason: why }),
    });
  } catch (e) {
    report("speech model failed to load", { model: SPEECH_MODEL_ID, dir, error: String((e as Error)?.message ?? e).slice(0, 500) }, "error");
    return false;
  }
  if (s.engines.closed) {
    await engine.close();
    return true;
  }
  s.engines.register(engine);
  const d = engine.describe();
  if (d.thread_note) s.log.warn("speech model runs in the main thread", { model: SPEECH_MODEL_ID, reason: d.thread_note });
  if (d.provider_fallback) s.log.warn("SWITCHYARD_ONNX_PROVIDER=cuda: falling back to cpu", { model: SPEECH_MODEL_ID, reason: d.provider_fallback });
  s.log.info("speech model loaded", d);
  return true;
}

export async function startSpeechEngine(s: Services): Promise<void> {
  let last = "";
  const report: Report = (msg, fields, level) => {
    const key = msg + JSON.stringify(fields);
    if (key === last) return;
    last = key;
    s.log[level](msg, fields);
  };
  if (await tryLoad(s, report)) return;
  let busy = false;
  const timer = setInterval(async () => {
    if (s.engines.closed) return clearInterval(timer);
    if (busy) return;
    busy = true;
    try {
      if (await tryLoad(s, report)) clearInterval(timer);
    } finally {
      busy = false;
    }
  }, POLL_INTERVAL_MS);
  // The poll must never keep a stopping process alive.
  timer.unref?.();
}
