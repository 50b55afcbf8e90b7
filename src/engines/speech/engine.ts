/**
 * The voice-82m engine: voice packs, phoneme vocabulary and a Kokoro-82M runner behind the shared
 * scheduler. Kokoro takes one utterance per run (lengths differ and the output is one waveform),
 * so the scheduler runs batches of one and only queues; turbo jobs use its priority lane and
 * overtake queued standard ones. The model runs in a worker thread (ONNX Runtime blocks the
 * thread it runs on), or in this thread if a worker cannot be started.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { LocalEngine } from "../registry";
import type { MetricsRegistry } from "../../metrics/registry";
import { accountShare, DEFAULT_ACCOUNT_QUEUE_PERCENT, Scheduler } from "../scheduler/index";
import { KOKORO_VOCAB } from "../../text/kokoro-vocab";
import type { Vocab } from "../../text/frontend";
import { VoiceBank } from "./voices";
import { presentInFolder } from "../model-files";
import { MODEL_FILES, SPEECH_FILES } from "./files";
import { KokoroModel, MAX_TOKENS, SPEECH_SESSION_TUNING, type KokoroRunner, type SynthesisJob } from "./model";

export { MAX_TOKENS, resolveIo, type SynthesisJob } from "./model";

export const SPEECH_MODEL_ID = "voice-82m";
export const SAMPLE_RATE = 24_000;
/** The graph `pull` fetches for CUDA; on a CPU it is onnx/model_quantized.onnx (files.ts). */
export const MODEL_FILE = "onnx/model.onnx";

/** The graph to load on `provider`: the first of MODEL_FILES[provider] present in `dir`. */
export function modelFileFor(dir: string, provider: "cpu" | "cuda"): string | null {
  return MODEL_FILES[provider].find((f) => existsSync(join(dir, f))) ?? null;
}
export const VOICES_DIR = "voices";

export interface SynthesisOptions {
  priority?: boolean;
  signal?: AbortSignal;
  /** A later chunk of a stream already under way (see SubmitOptions.admitted). */
  admitted?: boolean;
  /** Whose request it is (see SubmitOptions.account). */
  account?: string;
}

export interface SpeechLoadOptions {
  metrics?: MetricsRegistry;
  onSkip?: (file: string, why: string) => void;
  /** "worker" (default) falls back to "inline" when no worker thread can be started. */
  thread?: "worker" | "inline";
  /** Share of the model's queue one account may hold, in per cent (SWITCHYARD_ENGINE_QUEUE_ACCOUNT_PERCENT). */
  accountQueuePercent?: number;
  /** Load the optimised graph kept beside the model (optimised-graph.ts). */
  optimisedGraph?: boolean;
}

/** Chunks waiting for the model; each request keeps at most two queued (see stream.ts), so ~128 requests. */
const MAX_QUEUE = 256;

/** The phoneme vocabulary: config.json "vocab", else tokenizer.json model.vocab, else the v1.0 table. */
export function loadVocab(dir: string): { vocab: Vocab; source: string } {
  const read = (file: string): unknown => {
    try {
      return JSON.parse(readFileSync(join(dir, file), "utf8"));
    } catch {
      return null;
    }
  };
  const fromObject = (v: unknown): Vocab | null => {
    if (!v || typeof v !== "object") return null;
    const m = new Map<string, number>();
    for (const [k, id] of Object.entries(v as Record<string, unknown>)) if (typeof id === "number" && id > 0) m.set(k, id);
    return m.size > 0 ? m : null;
  };
  const config = fromObject((read("config.json") as { vocab?: unknown } | null)?.vocab);
  if (config) return { vocab: config, source: "config.json" };
  const tok = fromObject((read("tokenizer.json") as { model?: { vocab?: unknown } } | null)?.model?.vocab);
  if (tok) return { vocab: tok, source: "tokenizer.json" };
  return { vocab: KOKORO_VOCAB, source: "built-in Kokoro v1.0 vocabulary" };
}

export class SpeechEngine implements LocalEngine {
  readonly modelId = SPEECH_MODEL_ID;
  private readonly scheduler: Scheduler<SynthesisJob, Float32Array>;
  /** Model calls completed (every chunk of every request). */
  chunksSynthesised = 0;

  private constructor(
    readonly dir: string,
    private readonly runner: KokoroRunner,
    readonly voices: VoiceBank,
    readonly vocab: Vocab,
    private readonly info: Record<string, unknown>,
    metrics?: MetricsRegistry,
    accountQueuePercent = DEFAULT_ACCOUNT_QUEUE_PERCENT,
  ) {
    this.scheduler = new Scheduler<SynthesisJob, Float32Array>({
      name: SPEECH_MODEL_ID,
      maxBatchSize: 1,
      maxBatchTokens: MAX_TOKENS + 2,
      maxWaitMs: 0,
      maxQueue: MAX_QUEUE,
      maxQueuePerAccount: accountShare(MAX_QUEUE, accountQueuePercent),
      run: async (batch) => {
        const out = await Promise.all(batch.map((job) => this.runner.run(job)));
        this.chunksSynthesised += out.length;
        return out;
      },
      metrics,
    });
  }

  static async load(dir: string, provider: "cpu" | "cuda", opts: SpeechLoadOptions = {}): Promise<SpeechEngine> {
    const voices = VoiceBank.load(join(dir, VOICES_DIR), opts.onSkip);
    if (voices.size === 0) throw new Error("no voice packs (voices/*.bin) found");
    const { vocab, source } = loadVocab(dir);
    // describe() carries thread ("worker" | "main") and, after a fallback, thread_note.
    const file = modelFileFor(dir, provider);
    if (!file) throw new Error(`no model graph (${MODEL_FILES[provider].join(", ")}) found`);
    const runner: KokoroRunner = await KokoroModel.load(join(dir, file), provider, opts.thread ?? "worker", { ...SPEECH_SESSION_TUNING, optimisedGraph: opts.optimisedGraph === true });
    const info = {
      model: SPEECH_MODEL_ID,
      dir,
      file,
      ...runner.describe(),
      voices: voices.size,
      vocabulary: source,
    };
    return new SpeechEngine(dir, runner, voices, vocab, info, opts.metrics, opts.accountQueuePercent);
  }

  static filesPresent(dir: string): { ok: boolean; missing: string[] } {
    const missing: string[] = [];
    // Any graph will do to load; which one is chosen by the provider at load (modelFileFor).
    if (!MODEL_FILES.cpu.some((f) => existsSync(join(dir, f)))) missing.push(`${MODEL_FILE} or ${MODEL_FILES.cpu[0]}`);
    if (presentInFolder(SPEECH_FILES, dir).length === 0) missing.push(`${VOICES_DIR}/*.bin`);
    return { ok: missing.length === 0, missing };
  }

  describe(): Record<string, unknown> {
    return this.info;
  }

  /** Jobs waiting in the scheduler (not counting the one running). */
  get queued(): number {
    return this.scheduler.queued;
  }

  /** Queues one chunk; resolves to its waveform (float32, 24 kHz, mono). */
  synthesize(job: SynthesisJob, opts: SynthesisOptions = {}): Promise<Float32Array> {
    return this.scheduler.submit(job, { cost: job.ids.length + 2, priority: opts.priority, signal: opts.signal, admitted: opts.admitted, account: opts.account });
  }

  async close(): Promise<void> {
    this.scheduler.close();
    await this.runner.close();
  }
}
