/**
 * One ONNX session as the engines see it, wherever it runs: feeds and outputs are plain
 * {type, data, dims} records, so the same model code drives a session in this thread or one in
 * a worker thread (onnx-worker.ts). ONNX Runtime's Node binding runs a session synchronously on
 * the calling thread, so a session in the main thread freezes the HTTP server for a whole run;
 * `openOnnxSession` therefore prefers a worker, and falls back to this thread with a note when a
 * worker cannot be started (never when the model itself fails to load: that fails the same way).
 */
import type * as Ort from "onnxruntime-node";
import { createSession, type CreatedSession, type SessionTuning } from "./onnx-session";
import { ModelLoadError, WorkerSession } from "./onnx-worker-client";

export { ModelLoadError } from "./onnx-worker-client";

export type TensorType = "float32" | "int32" | "int64";
export type TensorArray = Float32Array | Int32Array | BigInt64Array;

/** A tensor in or out of a run, as plain data (structured-clonable, buffers transferable). */
export interface TensorData {
  type: TensorType;
  data: TensorArray;
  dims: readonly number[];
}

/** What a loaded session tells about itself. */
export interface SessionMeta {
  provider: "cpu" | "cuda";
  /** Set when cuda was asked for but could not be used. */
  fallback?: string;
  /** The optimised graph's fate when one was asked for ("made", "reused", or why not). */
  graph?: string;
  /** The float-convolution graph's fate, when one was asked for and the model has quantised convolutions. */
  floatConvs?: string;
  /** The fused graph's fate, when one was asked for on this provider and the model has what it fuses. */
  fusions?: string;
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata: readonly Ort.InferenceSession.ValueMetadata[];
  outputMetadata: readonly Ort.InferenceSession.ValueMetadata[];
}

export interface OnnxRunner {
  readonly meta: SessionMeta;
  /** "worker" when runs happen off the event loop. */
  readonly thread: "worker" | "main";
  /** Why it runs in the main thread although a worker was asked for. */
  readonly threadNote?: string;
  /**
   * Runs the session. Buffers listed in `transfer` (those of feeds the caller built for this run
   * only) are moved to the worker instead of copied; the caller must not touch them afterwards.
   */
  run(feeds: Record<string, TensorData>, outputs: readonly string[], transfer?: ArrayBuffer[]): Promise<Record<string, TensorData>>;
  release(): Promise<void>;
}

/** Plain copies of ORT's metadata: cheap, and safe to post between threads. */
function plainMeta(meta: readonly Ort.InferenceSession.ValueMetadata[]): Ort.InferenceSession.ValueMetadata[] {
  return meta.map((m) => (m.isTensor ? { name: m.name, isTensor: true, type: m.type, shape: [...m.shape] } : { name: m.name, isTensor: false }));
}

export function sessionMeta(created: CreatedSession): SessionMeta {
  const s = created.session;
  return {
    provider: created.provider,
    ...(created.fallback ? { fallback: created.fallback } : {}),
    ...(created.graph ? { graph: created.graph } : {}),
    ...(created.floatConvs ? { floatConvs: created.floatConvs } : {}),
    ...(created.fusions ? { fusions: created.fusions } : {}),
    inputNames: [...s.inputNames],
    outputNames: [...s.outputNames],
    inputMetadata: plainMeta(s.inputMetadata),
    outputMetadata: plainMeta(s.outputMetadata),
  };
}

/** Runs feeds through a session in the calling thread (used by the worker, and as the fallback). */
export async function runSession(created: CreatedSession, feeds: Record<string, TensorData>, outputs: readonly string[]): Promise<Record<string, TensorData>> {
  const tensors: Record<string, Ort.Tensor> = {};
  for (const [name, f] of Object.entries(feeds)) tensors[name] = new created.ort.Tensor(f.type, f.data, f.dims);
  const result = await created.session.run(tensors, [...outputs]);
  const out: Record<string, TensorData> = {};
  for (const name of outputs) {
    const t = result[name]!;
    out[name] = { type: t.type as TensorType, data: t.data as TensorArray, dims: [...t.dims] };
  }
  return out;
}

/** The session in this thread: every run blocks the event loop for its whole duration. */
export class InlineSession implements OnnxRunner {
  readonly thread = "main" as const;
  readonly meta: SessionMeta;

  constructor(private readonly created: CreatedSession, readonly threadNote?: string) {
    this.meta = sessionMeta(created);
  }

  static async load(modelPath: string, provider: "cpu" | "cuda", threadNote?: string, tuning: SessionTuning = {}): Promise<InlineSession> {
    return new InlineSession(await createSession(modelPath, provider, tuning), threadNote);
  }

  run(feeds: Record<string, TensorData>, outputs: readonly string[]): Promise<Record<string, TensorData>> {
    return runSession(this.created, feeds, outputs);
  }

  release(): Promise<void> {
    return this.created.session.release();
  }
}

/**
 * A session in a worker thread ("worker", the default), or in this thread ("inline"). A worker
 * that cannot start falls back to this thread, with the reason in `threadNote` for the engine to
 * log; a model that does not load rejects (ModelLoadError) without a second try.
 */
export async function openOnnxSession(modelPath: string, provider: "cpu" | "cuda", thread: "worker" | "inline" = "worker", tuning: SessionTuning = {}): Promise<OnnxRunner> {
  if (thread === "inline") return InlineSession.load(modelPath, provider, undefined, tuning);
  try {
    return await WorkerSession.load(modelPath, provider, tuning);
  } catch (e) {
    if (e instanceof ModelLoadError) throw e;
    const why = String((e as Error)?.message ?? e).slice(0, 300);
    return InlineSession.load(modelPath, provider, `worker thread unavailable (${why}); running in the main thread`, tuning);
  }
}
