/**
 * Per-request embeddings work off the event loop: a few tokenizer threads (tokenizer-worker.ts),
 * each with its own copy of the model's tokenizer, tokenise a request's texts and write its
 * vectors' JSON text. Neither happens in the inference worker, whose every millisecond is the
 * accelerator's idle time. A request's job goes to the thread with the fewest items pending, in
 * one message. When no thread can be started, or a thread dies, the work is done in this thread,
 * as before; the result is the same either way (same tokenizer.json, same encoder).
 * SWITCHYARD_EMBEDDING_TOKENIZER_THREADS sets how many (README "Running on a GPU").
 */
import type { EmbeddingTokenizer } from "./tokenizer";
import type { InputType } from "./prompts";
import { encodeEmbedding, type RowEncoding } from "./vectors";

type Reply =
  | { type: "loaded" }
  | { type: "failed"; message: string }
  | { type: "encoded"; id: number; ids: Int32Array; lengths: Int32Array }
  | { type: "written"; id: number; texts: string[] }
  | { type: "error"; id: number; message: string };

/** Where the worker's code is (from source, or inside the compiled binary: see build.ts). */
function workerCandidates(): string[] {
  return import.meta.url.includes("$bunfs")
    ? ["./engines/embeddings/tokenizer-worker.ts", "./src/engines/embeddings/tokenizer-worker.ts"]
    : [new URL("./tokenizer-worker.ts", import.meta.url).href];
}

interface Thread {
  worker: Worker;
  /** Texts sent and not answered yet. */
  load: number;
  dead: boolean;
}

export class TokenizerPool {
  private nextId = 1;
  private readonly pending = new Map<number, { thread: Thread; items: number; resolve(r: number[][] | string[]): void; reject(e: Error): void }>();

  private constructor(private readonly threads: Thread[], private readonly local: EmbeddingTokenizer) {
    for (const t of threads) {
      t.worker.onmessage = (e: MessageEvent<Reply>) => this.receive(e.data);
      t.worker.onerror = () => this.lose(t);
      t.worker.addEventListener("close", () => this.lose(t));
    }
  }

  /** Starts `count` threads loading the tokenizer of `dir`; those that fail are left out. */
  static async start(dir: string, local: EmbeddingTokenizer, count: number): Promise<TokenizerPool> {
    const started = await Promise.all(Array.from({ length: Math.max(0, count) }, () => TokenizerPool.startOne(dir).catch(() => null)));
    return new TokenizerPool(started.filter((t): t is Thread => t !== null), local);
  }

  private static async startOne(dir: string): Promise<Thread> {
    let last: unknown = null;
    for (const spec of workerCandidates()) {
      try {
        const worker = new Worker(spec);
        await new Promise<void>((resolve, reject) => {
          worker.onerror = (e) => reject(new Error(e.message));
          worker.onmessage = (e: MessageEvent<Reply>) => (e.data.type === "loaded" ? resolve() : reject(new Error(e.data.type === "failed" ? e.data.message : "answered out of turn")));
          worker.postMessage({ type: "load", dir });
        }).catch((e) => {
          worker.terminate();
          throw e;
        });
        return { worker, load: 0, dead: false };
      } catch (e) {
        last = e;
      }
    }
    throw last;
  }

  /** Threads alive. */
  get size(): number {
    return this.threads.filter((t) => !t.dead).length;
  }

  /** Full sequences (BOS, task prompt + text, EOS) of `texts`, in order. */
  encodeTexts(texts: readonly string[], inputType?: InputType): Promise<number[][]> {
    const here = () => texts.map((t) => this.local.encodeText(t, inputType));
    return this.send<number[][]>(texts.length, { type: "encode", texts, ...(inputType ? { inputType } : {}) }, [], here);
  }

  /**
   * The JSON text of each vector's `embedding` value (vectors.ts encodeEmbedding). Vectors that
   * own their whole buffers have them moved to the thread: the caller must not use them afterwards.
   */
  writeVectors(vectors: Float32Array[], encoding: RowEncoding): Promise<string[]> {
    const here = () => vectors.map((v) => encodeEmbedding(v, encoding));
    // Views of a shared buffer (a batch's output, model.ts) are copied first: moving that buffer
    // would take it from the other requests' vectors, and cloning a view clones all of it.
    const whole = vectors.every((v) => v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) && new Set(vectors.map((v) => v.buffer)).size === vectors.length;
    const own = whole ? vectors : vectors.map((v) => v.slice());
    return this.send<string[]>(vectors.length, { type: "write", vectors: own, encoding }, own.map((v) => v.buffer as ArrayBuffer), here);
  }

  /** Sends a job to the least busy thread; done here when none is alive or the thread dies. */
  private send<R extends number[][] | string[]>(items: number, message: Record<string, unknown>, transfer: ArrayBuffer[], here: () => R): Promise<R> {
    const alive = this.threads.filter((t) => !t.dead);
    if (alive.length === 0 || items === 0) return Promise.resolve(here());
    const thread = alive.reduce((a, b) => (b.load < a.load ? b : a));
    const id = this.nextId++;
    thread.load += items;
    return new Promise<R>((resolve, reject) => {
      this.pending.set(id, { thread, items, resolve: resolve as (r: number[][] | string[]) => void, reject });
      thread.worker.postMessage({ ...message, id }, transfer);
    }).catch((e: unknown) => {
      // A thread that died mid-job. Texts are tokenised here instead (same tokenizer, same ids);
      // vectors already moved to it are gone, so that request fails (a 500, unbilled).
      if (e instanceof ThreadLost && message.type === "encode") return here();
      throw e;
    });
  }

  private receive(r: Reply): void {
    if (r.type !== "encoded" && r.type !== "written" && r.type !== "error") return;
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    p.thread.load -= p.items;
    if (r.type === "error") return p.reject(new Error(r.message));
    if (r.type === "written") return p.resolve(r.texts);
    const out: number[][] = [];
    let at = 0;
    for (const len of r.lengths) {
      out.push(Array.from(r.ids.subarray(at, at + len)));
      at += len;
    }
    p.resolve(out);
  }

  private lose(t: Thread): void {
    if (t.dead) return;
    t.dead = true;
    for (const [id, p] of this.pending) {
      if (p.thread !== t) continue;
      this.pending.delete(id);
      p.reject(new ThreadLost());
    }
  }

  close(): void {
    for (const t of this.threads) {
      t.dead = true;
      t.worker.terminate();
    }
    for (const p of this.pending.values()) p.reject(new ThreadLost());
    this.pending.clear();
  }
}

class ThreadLost extends Error {
  constructor() {
    super("tokenizer thread exited");
  }
}
