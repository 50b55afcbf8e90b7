/**
 * Start-up of voice-82m: loads SWITCHYARD_MODELS_DIR/voice-82m when its files are present and
 * registers the engine, which makes voice-82m and voice-82m-turbo live; see ../loader.ts for
 * the polling.
 */
import { SpeechEngine, SPEECH_MODEL_ID } from "./engine";
import { POLL_INTERVAL_MS, providerFor, startWhenPresent, type EngineLoader, type LocalEngineDeps } from "../loader";

export const speechLoader: EngineLoader<SpeechEngine> = {
  modelId: SPEECH_MODEL_ID,
  label: "speech",
  missingFiles: (dir) => SpeechEngine.filesPresent(dir).missing,
  load: (dir, s) =>
    SpeechEngine.load(dir, providerFor(s), {
      metrics: s.metrics,
      accountQueuePercent: s.config.engineQueueAccountPercent,
      optimisedGraph: s.config.optimisedGraph,
      onSkip: (file, why) => s.log.warn("voice pack skipped", { model: SPEECH_MODEL_ID, file, reason: why }),
    }),
};

export function startSpeechEngine(s: LocalEngineDeps, pollMs = POLL_INTERVAL_MS): Promise<void> {
  return startWhenPresent(s, speechLoader, pollMs);
}
