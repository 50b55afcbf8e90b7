/**
 * Start-up of embedding-300m: loads SWITCHYARD_MODELS_DIR/embedding-300m when its files are
 * present and registers the engine (the model becomes live); see ../loader.ts for the polling.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_BATCHING, EmbeddingEngine, EMBEDDING_MODEL_ID, REQUIRED_FILES } from "./engine";
import { accountShare } from "../scheduler/index";
import { EMBEDDING_SESSION_TUNING } from "./model";
import { POLL_INTERVAL_MS, providerFor, startWhenPresent, type EngineLoader, type LocalEngineDeps } from "../loader";

export const embeddingLoader: EngineLoader<EmbeddingEngine> = {
  modelId: EMBEDDING_MODEL_ID,
  label: "embedding",
  missingFiles: (dir) => REQUIRED_FILES.filter((f) => !existsSync(join(dir, f))),
  load: (dir, s) =>
    EmbeddingEngine.load(
      dir, providerFor(s), s.metrics,
      { maxQueuePerAccount: accountShare(DEFAULT_BATCHING.maxQueue, s.config.engineQueueAccountPercent) },
      "worker", { ...EMBEDDING_SESSION_TUNING, optimisedGraph: s.config.optimisedGraph, ...(s.config.fusedGraph ? {} : { fusionsOn: [] }) }, s.config.embeddingTokenizerThreads,
    ),
};

export function startEmbeddingEngine(s: LocalEngineDeps, pollMs = POLL_INTERVAL_MS): Promise<void> {
  return startWhenPresent(s, embeddingLoader, pollMs);
}
