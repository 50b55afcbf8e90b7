/**
 * Why a local model (embedding-300m, voice-82m) is not live, as a client error: without its
 * files it is 503 model_not_installed naming them and `switchyard models pull <id>` (no
 * Retry-After: only the operator can fix it); with its files present it is loading or failed to
 * load, which stays 503 model_unavailable with a Retry-After.
 */
import { join } from "node:path";
import type { Config } from "../config";
import { modelNotInstalled, modelUnavailable, type DomainError } from "../errors";
import type { EngineLoader } from "./loader";
import type { LocalEngine } from "./registry";
import { embeddingLoader } from "./embeddings";
import { speechLoader } from "./speech";

const LOADERS: readonly EngineLoader<LocalEngine>[] = [embeddingLoader, speechLoader];

/** The error for a request naming `requestedId`, served by the local engine `engineId`, which is not loaded. */
export function localModelUnavailable(s: { config: Pick<Config, "modelsDir"> }, requestedId: string, engineId: string): DomainError {
  const loader = LOADERS.find((l) => l.modelId === engineId);
  if (!loader) return modelUnavailable(requestedId);
  let missing: string[];
  try {
    missing = loader.missingFiles(join(s.config.modelsDir, engineId));
  } catch {
    return modelUnavailable(requestedId);
  }
  return missing.length > 0 ? modelNotInstalled(requestedId, engineId, missing) : modelUnavailable(requestedId);
}
