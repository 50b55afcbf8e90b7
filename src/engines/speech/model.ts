/**
 * One Kokoro ONNX session: feeds a chunk's token ids, style vector and speed, returns the
 * waveform. Input and output names and element types are read from the session, because the
 * published exports differ ("input_ids" vs "tokens", int64 vs int32, float vs int speed).
 * The session runs in a worker thread (onnx-runner.ts) unless asked to run inline or no worker
 * can be started.
 */
import type * as Ort from "onnxruntime-node";
import { describeIo, type SessionTuning } from "../onnx-session";
import { openOnnxSession, type OnnxRunner, type TensorData } from "../onnx-runner";

/**
 * Kokoro's session: threads that sleep between operators, and quantised convolutions run as float
 * ones (graph/float-convs.ts). CPU seconds per second of audio on a 2-core machine, Kokoro's int8
 * graph in onnxruntime-node 1.30, the same phoneme ids, sessions measured in turn: spinning
 * threads (ORT's default) 1.47, sleeping threads 1.02-1.10; with float convolutions 0.71-0.86
 * spinning, 0.65-0.76 sleeping (spinning only while a run lasts: 0.74-0.95; one thread: 7% less
 * CPU, 50% more time per chunk). Bare ORT 1.32 in Python, default options, int8 graph: 0.62-0.87.
 * The float convolutions as 2-D ones (graph/float-convs.ts): 0.60-0.64 against 0.64-0.68 for the
 * 1-D ones, sleeping threads, same chunks, in turn (ORT 1.32). The server over HTTP, same chunks,
 * one run: 30.5 CPU s with 2-D convolutions against 31.8 with 1-D ones, 0.96x against 1.03x
 * Python ORT's default session (2026-11-28). test/bench/embeddings-ceiling.bench.ts compares the
 * server with both bare sessions.
 */
export const SPEECH_SESSION_TUNING: SessionTuning = { spinning: false, floatConvs: true };

export const STYLE_DIM = 256;
/** Phoneme tokens per model call; the pad token (0) at both ends makes 512. */
export const MAX_TOKENS = 510;

export interface SynthesisJob {
  /** Phoneme token ids, without pads. */
  ids: readonly number[];
  style: Float32Array;
  speed: number;
}

export interface IoNames {
  ids: string;
  idsType: "int64" | "int32";
  style: string;
  speed: string | null;
  speedType: "float32" | "int32" | "int64";
  output: string;
}

/** What runs chunks (KokoroModel, or a test double). */
export interface KokoroRunner {
  run(job: SynthesisJob): Promise<Float32Array>;
  describe(): Record<string, unknown>;
  close(): Promise<void>;
}

function tensorType(meta: Ort.InferenceSession.ValueMetadata | undefined): string | undefined {
  return meta && meta.isTensor ? meta.type : undefined;
}

/** Finds the three inputs and the waveform output by name, falling back to type and position. */
export function resolveIo(session: Pick<Ort.InferenceSession, "inputNames" | "outputNames" | "inputMetadata">): IoNames {
  const names = session.inputNames;
  const typeOf = (n: string) => tensorType(session.inputMetadata.find((m) => m.name === n));
  const ids = names.find((n) => /input_ids|tokens/i.test(n)) ?? names.find((n) => /int/.test(typeOf(n) ?? "")) ?? names[0];
  const style = names.find((n) => /style|ref_s|voice/i.test(n)) ?? names.find((n) => n !== ids && typeOf(n) === "float32");
  const speed = names.find((n) => /speed/i.test(n)) ?? null;
  if (!ids || !style) throw new Error(`model inputs ${names.join(", ")} do not include token ids and a style vector`);
  const output = session.outputNames.find((n) => /waveform|audio|wav/i.test(n)) ?? session.outputNames[0];
  if (!output) throw new Error("model has no outputs");
  const idsType = typeOf(ids) === "int32" ? "int32" : "int64";
  const st = speed ? typeOf(speed) : undefined;
  const speedType = st === "int32" || st === "int64" ? st : "float32";
  return { ids, idsType, style, speed, speedType, output };
}

export class KokoroModel implements KokoroRunner {
  private constructor(
    private readonly session: OnnxRunner,
    private readonly io: IoNames,
    private readonly info: Record<string, unknown>,
  ) {}

  /** `thread`: "worker" (default; falls back to the main thread when no worker can start) or "inline". */
  static async load(modelPath: string, provider: "cpu" | "cuda", thread: "worker" | "inline" = "worker", tuning: SessionTuning = {}): Promise<KokoroModel> {
    const session = await openOnnxSession(modelPath, provider, thread, tuning);
    let io: IoNames;
    try {
      io = resolveIo(session.meta);
    } catch (e) {
      await session.release();
      throw e;
    }
    const info = {
      provider: session.meta.provider,
      provider_fallback: session.meta.fallback,
      ...(session.meta.graph ? { graph: session.meta.graph } : {}),
      ...(session.meta.floatConvs ? { float_convs: session.meta.floatConvs } : {}),
      inputs: describeIo(session.meta.inputMetadata),
      outputs: describeIo(session.meta.outputMetadata),
      thread: session.thread,
      ...(session.threadNote ? { thread_note: session.threadNote } : {}),
    };
    return new KokoroModel(session, io, info);
  }

  describe(): Record<string, unknown> {
    return this.info;
  }

  /**
   * One chunk. The token-id buffer is built for this run and moved to the worker; the style
   * vector is the caller's, so it is copied.
   */
  async run(job: SynthesisJob): Promise<Float32Array> {
    if (job.ids.length === 0) return new Float32Array(0);
    const padded = [0, ...job.ids.slice(0, MAX_TOKENS), 0];
    const n = padded.length;
    const idData = this.io.idsType === "int32" ? Int32Array.from(padded) : BigInt64Array.from(padded, BigInt);
    const feeds: Record<string, TensorData> = {
      [this.io.ids]: { type: this.io.idsType, data: idData, dims: [1, n] },
      [this.io.style]: { type: "float32", data: job.style, dims: [1, STYLE_DIM] },
    };
    if (this.io.speed) {
      const whole = Math.max(1, Math.round(job.speed));
      feeds[this.io.speed] =
        this.io.speedType === "float32" ? { type: "float32", data: Float32Array.of(job.speed), dims: [1] }
        : this.io.speedType === "int32" ? { type: "int32", data: Int32Array.of(whole), dims: [1] }
        : { type: "int64", data: BigInt64Array.of(BigInt(whole)), dims: [1] };
    }
    const out = await this.session.run(feeds, [this.io.output], [idData.buffer as ArrayBuffer]);
    const wave = out[this.io.output]!.data as Float32Array;
    // From a worker the buffer is ours alone; in this thread ORT may reuse it, and encoders hold
    // on to samples across chunks, so that one is copied.
    return this.session.thread === "worker" ? wave : new Float32Array(wave);
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
