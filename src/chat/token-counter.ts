/**
 * Token counting off the event loop. Counting runs at ~20 MB/s, so a long prompt or a long relayed
 * output would stall every other request for as long as it takes (an 8 MB prompt: about half a
 * second). Texts short enough to count in well under a millisecond are counted inline; longer
 * ones go to one worker thread, started on first use, one job at a time in arrival order. A job
 * whose caller has gone (its signal aborted) before its turn is dropped unrun.
 */
import { countTexts, promptOverhead, promptTexts, textLength } from "./tokens";
import type { TokenJob, TokenReply } from "./token-worker";

/** Up to this many characters are counted on the calling thread (≲ 1 ms even for hostile text). */
export const INLINE_MAX_CHARS = 4_096;

type Message = Parameters<typeof promptTexts>[0][number];

export interface CountOptions {
  /** Counting may stop once the count exceeds this (the result is then above it). */
  limit?: number;
  /** The caller no longer needs the count: a job still waiting is dropped. */
  signal?: AbortSignal;
}

/** The count was not needed any more (its signal aborted while it waited). */
export class CountAborted extends Error {}

interface Job {
  texts: string[];
  limit: number | null;
  signal?: AbortSignal;
  resolve(n: number): void;
  reject(e: Error): void;
}

/**
 * Where the worker's code is: beside this file from source; in the compiled binary an extra entry
 * point of build.ts, addressed from the bundle's root (src/ or the repository): both are tried.
 */
function workerSpecs(): string[] {
  return import.meta.url.includes("$bunfs")
    ? ["./chat/token-worker.ts", "./src/chat/token-worker.ts"]
    : [new URL("./token-worker.ts", import.meta.url).href];
}

export class TokenCounter {
  private worker: Worker | null = null;
  private readonly queue: Job[] = [];
  private running: (Job & { id: number }) | null = null;
  private nextId = 1;
  private closed = false;
  /** Set when no worker could be started: counting then stays on the calling thread. */
  private inlineOnly = false;
  /** Which of workerSpecs() to start; moves on when a worker dies before it loaded. */
  private specIndex = 0;
  private workerStarted = false;

  constructor(
    private readonly onWarning: (message: string) => void = () => {},
    private readonly inlineMaxChars = INLINE_MAX_CHARS,
  ) {}

  /** The sum of the texts' tokens. */
  count(texts: string[], opts: CountOptions = {}): Promise<number> {
    if (opts.signal?.aborted) return Promise.reject(new CountAborted());
    const limit = opts.limit ?? Infinity;
    if (this.inlineOnly || this.closed || textLength(texts) <= this.inlineMaxChars) {
      try {
        return Promise.resolve(countTexts(texts, limit));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ texts, limit: Number.isFinite(limit) ? limit : null, signal: opts.signal, resolve, reject });
      this.pump();
    });
  }

  /** The tokens of one text. */
  text(text: string, opts: CountOptions = {}): Promise<number> {
    return this.count([text], opts);
  }

  /** A chat prompt's estimated tokens: its texts' BPE count plus template overhead and images. */
  async prompt(messages: Message[], extra: unknown[] = [], opts: CountOptions = {}): Promise<number> {
    const p = promptTexts(messages, extra);
    const overhead = promptOverhead(p);
    return overhead + (await this.count(p.texts, { ...opts, limit: opts.limit === undefined ? undefined : opts.limit - overhead }));
  }

  /** Stops the worker; counts asked for afterwards run inline. */
  close(): void {
    this.closed = true;
    const err = new Error("token counter closed");
    this.running?.reject(err);
    this.running = null;
    for (const job of this.queue.splice(0)) job.reject(err);
    this.worker?.terminate();
    this.worker = null;
  }

  private pump(): void {
    if (this.running) return;
    let job: Job | undefined;
    while ((job = this.queue.shift())) {
      if (!job.signal?.aborted) break;
      job.reject(new CountAborted());
    }
    if (!job) return;
    const worker = this.ensureWorker();
    if (!worker) {
      // No worker can run here: count inline rather than fail the request.
      try {
        job.resolve(countTexts(job.texts, job.limit ?? Infinity));
      } catch (e) {
        job.reject(e as Error);
      }
      return this.pump();
    }
    const id = this.nextId++;
    this.running = { ...job, id };
    const message: TokenJob = { id, texts: job.texts, limit: job.limit };
    worker.postMessage(message);
  }

  private ensureWorker(): Worker | null {
    if (this.worker) return this.worker;
    const specs = workerSpecs();
    while (this.specIndex < specs.length) {
      try {
        const worker = new Worker(specs[this.specIndex]!);
        worker.onmessage = (e: MessageEvent<TokenReply>) => this.receive(worker, e.data);
        worker.onerror = (e) => this.crashed(worker, new Error(`token worker failed: ${e.message}`));
        worker.addEventListener("close", () => this.crashed(worker, new Error("token worker exited")));
        // An idle worker must not keep a CLI command (or a test) alive.
        (worker as Worker & { unref?(): void }).unref?.();
        this.worker = worker;
        this.workerStarted = false;
        return worker;
      } catch {
        this.specIndex++;
      }
    }
    this.inlineOnly = true;
    this.onWarning("token counting runs on the main thread: its worker could not start");
    return null;
  }

  private receive(worker: Worker, r: TokenReply): void {
    if ("ready" in r) {
      if (worker === this.worker) this.workerStarted = true;
      return;
    }
    const job = this.running;
    if (!job || job.id !== r.id) return;
    this.running = null;
    if ("count" in r) job.resolve(r.count);
    else job.reject(new Error(r.error));
    this.pump();
  }

  /** The job in flight fails; the next one starts a fresh worker. */
  private crashed(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    worker.terminate();
    const job = this.running;
    this.running = null;
    if (!this.workerStarted && job) {
      // It never started (its file is not where this build looked): try the next address, or
      // count inline; the job itself is not at fault.
      this.specIndex++;
      this.queue.unshift(job);
    } else job?.reject(err);
    if (!this.closed) this.pump();
  }
}
