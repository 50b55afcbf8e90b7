/**
 * Loading a local engine whenever its files are present: try at start-up, and while files are
 * missing or fail to load, look again every few seconds, so weights copied in later make the
 * model live without a restart (docs/local-models.md). Each distinct problem is logged once, not every poll.
 */
import { join } from "node:path";
import type { Config } from "../config";
import type { Log } from "../log";
import type { MetricsRegistry } from "../metrics/registry";
import { activateCuda, type ProviderDecision } from "../runtime/provider";
import type { EngineRegistry, LocalEngine } from "./registry";

export const POLL_INTERVAL_MS = 5_000;

/** What loading a local engine uses: its settings, metrics and log, and the execution provider. */
export interface EngineLoadDeps {
  config: Pick<Config, "engineQueueAccountPercent" | "optimisedGraph" | "fusedGraph" | "embeddingTokenizerThreads">;
  metrics: MetricsRegistry;
  log: Log;
  /** The execution provider of the local models, decided on first use. */
  onnxProvider(): ProviderDecision;
}

/** What starting local engines uses: what loading uses, where their files are, and the registry they go live in. */
export interface LocalEngineDeps extends EngineLoadDeps {
  config: EngineLoadDeps["config"] & Pick<Config, "modelsDir">;
  engines: EngineRegistry;
}

export interface EngineLoader<E extends LocalEngine> {
  modelId: string;
  /** For log lines: "embedding", "speech". */
  label: string;
  /** Files the model needs that are not in `dir` (empty when it can load). */
  missingFiles(dir: string): string[];
  load(dir: string, s: EngineLoadDeps): Promise<E>;
}

type Level = "info" | "warn" | "error";

/** The provider a model loads on; for CUDA its libraries are made loadable first. */
export function providerFor(s: Pick<EngineLoadDeps, "onnxProvider">): "cpu" | "cuda" {
  const decision = s.onnxProvider();
  if (decision.provider === "cuda") activateCuda(decision.libraries);
  return decision.provider;
}

function modelDir(s: LocalEngineDeps, modelId: string): string {
  return join(s.config.modelsDir, modelId);
}

/** Tries once; resolves whether the engine is now registered. */
async function tryLoad<E extends LocalEngine>(s: LocalEngineDeps, l: EngineLoader<E>, report: (msg: string, f: Record<string, unknown>, level: Level) => void) {
  if (s.engines.isLoaded(l.modelId)) return true;
  const dir = modelDir(s, l.modelId);
  const missing = l.missingFiles(dir);
  if (missing.length > 0) {
    report(`${l.label} model not loaded: files missing (run \`switchyard models pull ${l.modelId}\` or copy them in)`, { model: l.modelId, dir, missing: missing.join(", ") }, "info");
    return false;
  }
  let engine: E;
  try {
    engine = await l.load(dir, s);
  } catch (e) {
    report(`${l.label} model failed to load`, { model: l.modelId, dir, error: String((e as Error)?.message ?? e).slice(0, 500) }, "error");
    return false;
  }
  if (s.engines.closed || s.engines.isLoaded(l.modelId)) {
    await engine.close();
    return true;
  }
  s.engines.register(engine);
  const d = engine.describe();
  if (d.thread_note) s.log.warn(`${l.label} model runs in the main thread`, { model: l.modelId, reason: d.thread_note });
  if (d.provider_fallback) s.log.warn("CUDA session failed: falling back to cpu", { model: l.modelId, reason: d.provider_fallback });
  s.log.info(`${l.label} model loaded`, { ...d, provider_reason: d.provider_fallback ?? s.onnxProvider().reason });
  return true;
}

export async function startWhenPresent<E extends LocalEngine>(s: LocalEngineDeps, loader: EngineLoader<E>, pollMs = POLL_INTERVAL_MS): Promise<void> {
  let last = "";
  const report = (msg: string, fields: Record<string, unknown>, level: Level) => {
    const key = msg + JSON.stringify(fields);
    if (key === last) return;
    last = key;
    s.log[level](msg, fields);
  };
  if (await tryLoad(s, loader, report)) return;
  let busy = false;
  const timer = setInterval(async () => {
    if (s.engines.closed) return clearInterval(timer);
    if (busy) return;
    busy = true;
    try {
      if (await tryLoad(s, loader, report)) clearInterval(timer);
    } finally {
      busy = false;
    }
  }, pollMs);
  // The poll must never keep a stopping process alive.
  timer.unref?.();
}
