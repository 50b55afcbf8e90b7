/**
 * The embedding-300m engine: tokenizer + ONNX session + micro-batching scheduler. Routes hand it
 * already-tokenised sequences (so they can count and bill tokens first) and get back one vector
 * per sequence, in order. Each sequence is one scheduler job, so the entries of one request can
 * share batches with other requests' entries.
 */
import { join } from "node:path";
import type { LocalEngine } from "../registry";
import type { MetricsRegistry } from "../../metrics/registry";
import { Scheduler, QueueFullError } from "../scheduler/index";
import { engineQueueFullForAccount } from "../../errors";
import { loadTokenizer, type EmbeddingTokenizer } from "./tokenizer";
import { TokenizerPool } from "./tokenizer-pool";
import type { SequenceEncoder } from "./input";
import type { InputType } from "./prompts";
import { EmbeddingModel, type EmbeddingModelInfo } from "./model";
import { encodeEmbedding, type RowEncoding } from "./vectors";
import type { SessionTuning } from "../onnx-session";
import { batchLimitsFor } from "../scheduler/provider-batching";

/** What the engine needs from a loaded model: EmbeddingModel, or a wrapper around one. */
export interface EmbeddingRunner {
  readonly info: EmbeddingModelInfo;
  embed(batch: readonly (readonly number[])[]): Promise<Float32Array[]>;
  close(): Promise<void>;
}

export const EMBEDDING_MODEL_ID = "embedding-300m";
/** Longest sequence (BOS and EOS included) the model accepts: its context window. */
export const MAX_SEQUENCE_TOKENS = 2048;
/** Files that must be present for the engine to load, relative to its model directory. */
export const REQUIRED_FILES = ["onnx/model.onnx", "tokenizer.json"] as const;

export interface BatchingOptions {
  maxBatchSize: number;
  /** Sum of sequence lengths in one batch. */
  maxBatchTokens: number;
  maxWaitMs: number;
  /** Sequences (not requests) waiting; a request that does not fit is refused whole (503). */
  maxQueue: number;
  /** Sequences one account may have waiting (maxQueue unless told); past it a request is refused whole (429). */
  maxQueuePerAccount?: number;
}

/**
 * Defaults sized for CPU inference of a 300M model: batches of up to 32 sequences / 8,192 tokens
 * keep one run well under a second, and 2 ms of waiting costs little next to a run. A model that
 * runs on CUDA gets larger batches (scheduler/provider-batching.ts).
 */
export const DEFAULT_BATCHING: BatchingOptions = { maxBatchSize: 32, maxBatchTokens: 8192, maxWaitMs: 2, maxQueue: 8192 };

/**
 * Below these sizes a request's texts are tokenised, and its float vectors written, in the event
 * loop rather than handed to a tokenizer thread: a hand-off costs the event loop 4–9 µs and the
 * process 10–18 µs in all (a message each way, a thread woken), more than the work it moves
 * (~0.15 µs per character of a new text, ~25 µs per 768 floats), so small requests are cheaper done
 * here, while large ones (up to ~2,048 × 2,048 tokens) still leave the event loop free.
 */
export interface HandOffThresholds {
  /** Characters of text in one request; more go to a tokenizer thread. */
  textChars: number;
  /** Float values to write as JSON in one request; more go to a tokenizer thread. */
  floatValues: number;
}

export const DEFAULT_HAND_OFF: HandOffThresholds = { textChars: 1_000, floatValues: 4 * 768 };

export interface EmbedOptions {
  priority?: boolean;
  signal?: AbortSignal;
  /** Whose request it is (see SubmitOptions.account). */
  account?: string;
}

export { loadTokenizer } from "./tokenizer";

export class EmbeddingEngine implements LocalEngine {
  readonly modelId = EMBEDDING_MODEL_ID;
  private readonly scheduler: Scheduler<number[], Float32Array>;
  /** What the route tokenises with: texts go to the tokenizer threads when there are some. */
  readonly encoder: SequenceEncoder;

  constructor(
    readonly dir: string,
    readonly tokenizer: EmbeddingTokenizer,
    private readonly model: EmbeddingRunner,
    private readonly batching: BatchingOptions = DEFAULT_BATCHING,
    metrics?: MetricsRegistry,
    private readonly pool: TokenizerPool | null = null,
    private readonly handOff: HandOffThresholds = DEFAULT_HAND_OFF,
  ) {
    const local = tokenizer;
    const encodeHere = (texts: readonly string[], inputType?: InputType) => texts.map((t) => local.encodeText(t, inputType));
    this.encoder = {
      vocabSize: local.vocabSize,
      maxPieceChars: local.maxPieceChars,
      encodeText: (text, inputType) => local.encodeText(text, inputType),
      wrapIds: (ids, inputType) => local.wrapIds(ids, inputType),
      ...(pool && pool.size > 0
        ? {
            encodeTexts: async (texts: readonly string[], inputType?: InputType) => {
              let chars = 0;
              for (const t of texts) chars += t.length;
              return chars <= handOff.textChars ? encodeHere(texts, inputType) : pool.encodeTexts(texts, inputType);
            },
          }
        : {}),
    };
    this.scheduler = new Scheduler<number[], Float32Array>({
      name: EMBEDDING_MODEL_ID,
      ...batching,
      run: (batch) => this.model.embed(batch),
      metrics,
    });
  }

  /** Loads tokenizer.json (+ tokenizer_config.json if present) and onnx/model.onnx from `dir`. */
  /** `thread`: "worker" (default; falls back to the main thread when no worker can start) or "inline". */
  /** `tuning` overrides the session's thread settings (benchmarks compare them). */
  /** Batch limits follow the provider the session really runs on (after any fallback), unless `batching` sets them. */
  /** `tokenizerThreads`: texts are tokenised in that many threads (0: in the main thread). */
  /** `handOff`: how large a request's work must be to go to those threads (tests set 0: always). */
  static async load(dir: string, provider: "cpu" | "cuda", metrics?: MetricsRegistry, batching: Partial<BatchingOptions> = {}, thread: "worker" | "inline" = "worker", tuning?: SessionTuning, tokenizerThreads = 0, handOff: HandOffThresholds = DEFAULT_HAND_OFF): Promise<EmbeddingEngine> {
    const tokenizer = loadTokenizer(dir);
    // The threads load their tokenizers while the model loads; they never reject (see start).
    const starting = tokenizerThreads > 0 ? TokenizerPool.start(dir, tokenizer, tokenizerThreads) : Promise.resolve(null);
    let model: EmbeddingModel;
    try {
      model = await EmbeddingModel.load(join(dir, "onnx", "model.onnx"), provider, tokenizer.padId, thread, tuning);
    } catch (e) {
      (await starting)?.close();
      throw e;
    }
    const pool = await starting;
    return new EmbeddingEngine(dir, tokenizer, model, { ...DEFAULT_BATCHING, ...batchLimitsFor(model.info.provider), ...batching }, metrics, pool, handOff);
  }

  get dimensions(): number {
    return this.model.info.dimensions;
  }

  get queued(): number {
    return this.scheduler.queued;
  }

  /**
   * Embeds full sequences (from tokenizer.encodeText / wrapIds). All or nothing: if the queue
   * cannot take every sequence the request is refused before any is queued, and if one fails
   * or the signal fires, the request's other queued sequences are withdrawn.
   */
  async embed(sequences: number[][], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    if (this.scheduler.queued + sequences.length > this.batching.maxQueue) throw new QueueFullError(EMBEDDING_MODEL_ID, this.batching.maxQueue);
    const account = opts.account ?? "";
    const perAccount = this.scheduler.maxQueuePerAccount;
    if (this.scheduler.queuedFor(account) + sequences.length > perAccount) throw engineQueueFullForAccount(EMBEDDING_MODEL_ID, perAccount);
    // One sequence has no siblings to withdraw: the caller's signal is enough.
    if (sequences.length === 1) return [await this.scheduler.submit(sequences[0]!, { cost: sequences[0]!.length, priority: opts.priority, signal: opts.signal, account })];
    const local = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, local.signal]) : local.signal;
    try {
      return await Promise.all(sequences.map((seq) => this.scheduler.submit(seq, { cost: seq.length, priority: opts.priority, signal, account })));
    } catch (e) {
      local.abort();
      throw e;
    }
  }

  /**
   * As embed, but each vector comes back as the JSON text of its `embedding` value (truncated to
   * `encoding.dims`, renormalised, floats or base64). JSON floats (~25 µs per 768) are written
   * by the tokenizer threads when there are some and the request has more than
   * `handOff.floatValues` of them; base64 (~1 µs per vector) and small requests here.
   */
  async embedEncoded(sequences: number[][], encoding: RowEncoding, opts: EmbedOptions = {}): Promise<string[]> {
    const vectors = await this.embed(sequences, opts);
    const floats = vectors.length * Math.min(encoding.dims, this.dimensions);
    if (encoding.format === "float" && floats > this.handOff.floatValues && this.pool && this.pool.size > 0) return this.pool.writeVectors(vectors, encoding);
    return vectors.map((v) => encodeEmbedding(v, encoding));
  }

  describe(): Record<string, unknown> {
    const i = this.model.info;
    return {
      model: EMBEDDING_MODEL_ID,
      dir: this.dir,
      provider: i.provider,
      ...(i.fallback ? { provider_fallback: i.fallback } : {}),
      thread: i.thread,
      ...(i.threadNote ? { thread_note: i.threadNote } : {}),
      inputs: i.inputs.map((x) => `${x.name}:${x.type ?? "?"}[${(x.shape ?? []).join(",")}]`).join(" "),
      output: i.output,
      dimensions: i.dimensions,
      vocab_size: this.tokenizer.vocabSize,
      max_batch_size: this.batching.maxBatchSize,
      max_batch_tokens: this.batching.maxBatchTokens,
      tokenizer_threads: this.pool?.size ?? 0,
      ...(i.graph ? { graph: i.graph } : {}),
      ...(i.fusions ? { fusions: i.fusions } : {}),
    };
  }

  async close(): Promise<void> {
    this.scheduler.close();
    this.pool?.close();
    await this.model.close();
  }
}
