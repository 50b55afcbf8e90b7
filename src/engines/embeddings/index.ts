/**
 * Start-up of embedding-300m: loads SWITCHYARD_MODELS_DIR/embedding-300m when its files are
 * present and registers the engine (the model becomes live). While files are missing or fail to
 * load, it looks again every few seconds, so weights copied in later make the model appear
 * without a restart (contract §3). Each distinct problem is logged once, not every poll.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Services } from "../../services";
import { EmbeddingEngine, EMBEDDING_MODEL_ID, REQUIRED_FILES } from "./engine";

export const POLL_INTERVAL_MS = 5_000;

export function embeddingModelDir(s: Services): string {
  return join(s.config.modelsDir, EMBEDDING_MODEL_ID);
}

/** Tries once; resolves whether the engine is now registered. */
async function tryLoad(s: Services, report: (msg: string, fields: Record<string, unknown>, level: "info" | "error") => void): Promise<boolean> {
  if (s.engines.isLoaded(EMBEDDING_MODEL_ID)) return true;
  const dir = embeddingModelDir(s);
  const missing = REQUIRED_FILES.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) {
    report("embedding model not loaded: files missing (run `switchyard models pull` or copy them in)", { model: EMBEDDING_MODEL_ID, dir, missing: missing.join(", ") }, "info");
    return false;
  }
  let engine: EmbeddingEngine;
  try {
    engine = await EmbeddingEngine.load(dir, s.config.onnxProvider, s.metrics);
  } catch (e) {
    report("embedding model failed to load", { model: EMBEDDING_MODEL_ID, dir, error: String((e as Error)?.message ?? e).slice(0, 500) }, "error");
    return false;
  }
  if (s.engines.closed || s.engines.isLoaded(EMBEDDING_MODEL_ID)) {
    await engine.close();
    return true;
  }
  s.engines.register(engine);
  const d = engine.describe();
  if (d.thread_note) s.log.warn("embedding model runs in the main thread", { model: EMBEDDING_MODEL_ID, reason: d.thread_note });
  if (d.provider_fallback) s.log.warn("SWITCHYARD_ONNX_PROVIDER=cuda: falling back to cpu", { model: EMBEDDING_MODEL_ID, reason: d.provider_fallback });
  s.log.info("embedding model loaded", d);
  return true;
}

export async function startEmbeddingEngine(s: Services, pollMs = POLL_INTERVAL_MS): Promise<void> {
  let last = "";
  const report = (msg: string, fields: Record<string, unknown>, level: "info" | "error") => {
    const key = msg + JSON.stringify(fields);
    if (key === last) return;
    last = key;
    if (level === "error") s.log.error(msg, fields);
    else s.log.info(msg, fields);
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
  }, pollMs);
  // The poll must never keep a stopping process alive.
  timer.unref?.();
}
