/**
 * The embedding model's ONNX session: finds its inputs and output by name in the session's own
 * metadata (input_ids, attention_mask, optional token_type_ids → sentence_embedding), pads a
 * batch of token sequences into int64 tensors and returns one vector per sequence. The export
 * already pools, projects and normalises, so the vector is used as is. The session runs in a worker
 * thread (onnx-runner.ts) unless asked to run inline or no worker can be started.
 */
import type * as Ort from "onnxruntime-node";
import { describeIo, type SessionTuning } from "../onnx-session";
import { openOnnxSession, type OnnxRunner, type TensorData } from "../onnx-runner";

export class ModelSignatureError extends Error {}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Spinning: a batch-1 request is a few dozen short operators, and waking sleeping threads for
 * each added ~10 ms to a ~40 ms run. The plain graph on CPU: ORT's saved graph orders the same
 * nodes so that they ran 2–5% slower there (see SessionTuning.plainGraphOn). Fusions on CPU: the
 * transformer's GELU and attention layout in fewer passes (graph/transformer-fusions.ts).
 */
export const EMBEDDING_SESSION_TUNING: SessionTuning = { spinning: true, plainGraphOn: ["cpu"], fusionsOn: ["cpu"] };

export interface EmbeddingModelInfo {
  provider: "cpu" | "cuda";
  fallback?: string;
  /** The optimised graph's fate when one was asked for ("made", "reused", or why not). */
  graph?: string;
  /** The fused graph's fate (graph/transformer-fusions.ts) when it applies. */
  fusions?: string;
  inputs: ReturnType<typeof describeIo>;
  outputs: ReturnType<typeof describeIo>;
  output: string;
  dimensions: number;
  thread: "worker" | "main";
  /** Why the model runs in the main thread although a worker was asked for. */
  threadNote?: string;
}

function tensorMeta(meta: readonly Ort.InferenceSession.ValueMetadata[], name: string): Ort.InferenceSession.TensorValueMetadata | undefined {
  const m = meta.find((x) => x.name === name);
  return m && m.isTensor ? m : undefined;
}

export class EmbeddingModel {
  private constructor(
    private readonly session: OnnxRunner,
    private readonly idType: "int64" | "int32",
    private readonly hasTokenTypes: boolean,
    private readonly padId: number,
    readonly info: EmbeddingModelInfo,
  ) {}

  static async load(modelPath: string, provider: "cpu" | "cuda", padId: number, thread: "worker" | "inline" = "worker", tuning: SessionTuning = EMBEDDING_SESSION_TUNING): Promise<EmbeddingModel> {
    const session = await openOnnxSession(modelPath, provider, thread, tuning);
    const { provider: used, fallback, graph, fusions } = session.meta;
    try {
      const ids = tensorMeta(session.meta.inputMetadata, "input_ids");
      const mask = tensorMeta(session.meta.inputMetadata, "attention_mask");
      if (!ids || !mask) throw new ModelSignatureError(`model inputs are [${session.meta.inputNames.join(", ")}]; expected input_ids and attention_mask`);
      if ((ids.type !== "int64" && ids.type !== "int32") || ids.type !== mask.type) {
        throw new ModelSignatureError(`input_ids/attention_mask must both be int64 or int32, got ${ids.type}/${mask.type}`);
      }
      const known = new Set(["input_ids", "attention_mask", "token_type_ids"]);
      const extra = session.meta.inputNames.filter((n) => !known.has(n));
      if (extra.length) throw new ModelSignatureError(`model needs inputs this engine cannot fill: ${extra.join(", ")}`);
      // Prefer the pooled, normalised sentence embedding; fall back to a single 2-D float output.
      const candidates = session.meta.outputMetadata.filter((m): m is Ort.InferenceSession.TensorValueMetadata => m.isTensor && m.type === "float32" && m.shape.length === 2);
      const out = tensorMeta(session.meta.outputMetadata, "sentence_embedding") ?? (candidates.length === 1 ? candidates[0] : undefined);
      if (!out) throw new ModelSignatureError(`model outputs are [${session.meta.outputNames.join(", ")}]; expected sentence_embedding [batch, dims]`);
      const dims = out.shape[1];
      if (typeof dims !== "number" || dims < 1) throw new ModelSignatureError(`output ${out.name} has no fixed width (shape [${out.shape.join(", ")}])`);
      const info: EmbeddingModelInfo = {
        provider: used,
        ...(fallback ? { fallback } : {}),
        ...(graph ? { graph } : {}),
        ...(fusions ? { fusions } : {}),
        inputs: describeIo(session.meta.inputMetadata),
        outputs: describeIo(session.meta.outputMetadata),
        output: out.name,
        dimensions: dims,
        thread: session.thread,
        ...(session.threadNote ? { threadNote: session.threadNote } : {}),
      };
      return new EmbeddingModel(session, ids.type, session.meta.inputNames.includes("token_type_ids"), padId, info);
    } catch (e) {
      await session.release();
      throw e;
    }
  }

  /**
   * Runs one batch. Sequences are right-padded with the pad id to the longest one; the attention
   * mask keeps padding out of the pooling. The feed buffers are built for this run only, so they
   * are moved to the worker rather than copied. The vectors are views of the batch's one output
   * buffer: a buffer of its own per vector cost the event loop ~5 µs a request once the base64
   * encoder asked for it (a typed array's `buffer` is made on first use); the tokenizer pool
   * copies the few it moves to a thread (tokenizer-pool.ts writeVectors).
   */
  async embed(batch: readonly (readonly number[])[]): Promise<Float32Array[]> {
    if (batch.length === 0) return [];
    const rows = batch.length;
    let cols = 0;
    for (const seq of batch) if (seq.length > cols) cols = seq.length;
    const big = this.idType === "int64";
    const ids = big ? new BigInt64Array(rows * cols) : new Int32Array(rows * cols);
    const mask = big ? new BigInt64Array(rows * cols) : new Int32Array(rows * cols);
    // Ids (and the pad id) are non-negative and below 2^31, so an int64 is its low 32-bit word
    // with a zero high word: written through an Int32Array view, no BigInt is made per token.
    const words = big ? 2 : 1;
    const low = big && !LITTLE_ENDIAN ? 1 : 0;
    const ids32 = new Int32Array(ids.buffer);
    const mask32 = new Int32Array(mask.buffer);
    for (let r = 0; r < rows; r++) {
      const seq = batch[r]!;
      let at = r * cols * words + low;
      for (let c = 0; c < cols; c++, at += words) {
        if (c < seq.length) {
          ids32[at] = seq[c]!;
          mask32[at] = 1;
        } else ids32[at] = this.padId;
      }
    }
    const dims = [rows, cols];
    const feeds: Record<string, TensorData> = {
      input_ids: { type: this.idType, data: ids, dims },
      attention_mask: { type: this.idType, data: mask, dims },
    };
    const transfer = [ids.buffer as ArrayBuffer, mask.buffer as ArrayBuffer];
    if (this.hasTokenTypes) {
      const types = big ? new BigInt64Array(rows * cols) : new Int32Array(rows * cols);
      feeds.token_type_ids = { type: this.idType, data: types, dims };
      transfer.push(types.buffer as ArrayBuffer);
    }
    const result = await this.session.run(feeds, [this.info.output], transfer);
    const data = result[this.info.output]!.data as Float32Array;
    const d = this.info.dimensions;
    const vectors: Float32Array[] = [];
    for (let r = 0; r < rows; r++) vectors.push(data.subarray(r * d, (r + 1) * d));
    return vectors;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
