/**
 * Starts every local engine whose files are present in SWITCHYARD_MODELS_DIR.
 * Missing files leave that model not live (absent from /v1/models, 503 on request).
 */
import type { LocalEngineDeps } from "./loader";
import { startEmbeddingEngine } from "./embeddings/index";
import { startSpeechEngine } from "./speech/index";

export async function startLocalEngines(s: LocalEngineDeps): Promise<void> {
  await Promise.all([startEmbeddingEngine(s), startSpeechEngine(s)]);
}
