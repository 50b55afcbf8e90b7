/**
 * Tokenising embeddings input off the event loop: a few tokenizer threads (tokenizer-worker.ts),
 * each with its own copy of the model's tokenizer. A request's texts go to the thread with the
 * fewest texts pending, in one message. When no thread can be started, or a thread dies, texts are
 * tokenised in this thread, as before; the ids are the same either way (same tokenizer.json).
 * SWITCHYARD_EMBEDDING_TOKENIZER_THREADS sets how many (README "Embeddings").
 */
import type { EmbeddingTokenizer } from "./tokenizer";
import type { InputType } from "./prompts";

type Reply =
  | { type: "loaded" }
  | { type: "failed"; message: string }
  | { type: "encoded"; id: number; ids: Int32Array; lengths: Int32Array }
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
  private readonly pending = new Map<number, { thread: Thread; texts: number; resolve(s: number[][]): void; reject(e: Error): void }>();

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
    const alive = this.threads.filter((t) => !t.dead);
    if (alive.length === 0 || texts.length === 0) return Promise.resolve(texts.map((t) => this.local.encodeText(t, inputType)));
    const thread = alive.reduce((a, b) => (b.load < a.load ? b : a));
    const id = this.nextId++;
    thread.load += texts.length;
    return new Promise<number[][]>((resolve, reject) => {
      this.pending.set(id, { thread, texts: texts.length, resolve, reject });
      thread.worker.postMessage({ type: "encode", id, texts, ...(inputType ? { inputType } : {}) });
    }).catch((e: unknown) => {
      // A thread that died mid-job: tokenise here instead (same tokenizer, same ids).
      if (e instanceof ThreadLost) return texts.map((t) => this.local.encodeText(t, inputType));
      throw e;
    });
  }

  private receive(r: Reply): void {
    if (r.type !== "encoded" && r.type !== "error") return;
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    p.thread.load -= p.texts;
    if (r.type === "error") return p.reject(new Error(r.message));
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

class ThreadLost extends Error {}
