/**
 * Token counting off the event loop. Counting runs at ~20 MB/s, so a long prompt or a long relayed
 * output would stall every other request for as long as it takes (an 8 MB prompt: about half a
 * second), and the tokenizer's tables would make every full garbage collection of the serving
 * thread slower. So all counting happens in worker threads, started on first use, in two lanes:
 * short texts (a chat turn) in one, long ones in another, so that neither a long count nor the
 * garbage collections its megabytes of text cause in that thread can delay a short count. Each
 * worker counts in steps, the accounts taking turns (see token-worker.ts and queue.ts), and an
 * account may have at most maxQueuedChars characters queued for counts it waits on before its
 * request is admitted (a 429 past that, see CountOptions.admission). A job whose caller has gone
 * (its signal aborted) is dropped.
 *
 * If no worker can start, counting falls back to the calling thread, with a warning.
 */
import { countTexts, isLetterAt, promptOverhead, promptTexts, SHORT_JOB_CHARS, textLength } from "./tokens";
import type { TokenJob, TokenReply } from "./token-worker";
import { AccountBudget } from "../limits/account-budget";
import { tokenQueueFull } from "../errors";

type Message = Parameters<typeof promptTexts>[0][number];

/**
 * Longer jobs are handed to the worker in parts of about this size, one per turn of the event
 * loop: copying megabytes into one message would hold the serving thread for milliseconds.
 */
const PART_CHARS = 128 * 1024;

export interface CountOptions {
  /** Counting may stop once the count exceeds this (the result is then above it). */
  limit?: number;
  /** The caller no longer needs the count: the job is dropped and the promise rejects. */
  signal?: AbortSignal;
  /** Whose lane the job waits in (the accounts take turns); the service's own when absent. */
  account?: string;
  /**
   * A count a request waits on before it is admitted (count_tokens, a context check): refused
   * with a 429 when the account already has maxQueuedChars characters queued. Counts of work
   * already done (usage an upstream omitted, relayed output) are queued without that check.
   */
  admission?: boolean;
}

export interface CounterOptions {
  /** Most characters one account may have queued for counting (SWITCHYARD_TOKEN_QUEUE_CHARS). */
  maxQueuedChars?: number;
  /** The long lane's share of a core over time (SWITCHYARD_TOKEN_BACKGROUND_PERCENT; see duty-cycle.ts). */
  backgroundPercent?: number;
}

/**
 * Prompts up to this many characters are counted in the short lane (a few milliseconds of prose,
 * taken in 4 Ki steps in turn with other accounts). Relayed output keeps SHORT_JOB_CHARS: tallied
 * there, its garbage grew the short worker's heap (test/backpressure.test.ts).
 */
export const SHORT_PROMPT_CHARS = 64 * 1024;

/** The default of SWITCHYARD_TOKEN_BACKGROUND_PERCENT. */
export const DEFAULT_BACKGROUND_PERCENT = 50;

/** The default of SWITCHYARD_TOKEN_QUEUE_CHARS. */
export const DEFAULT_MAX_QUEUED_CHARS = 32 * 1024 * 1024;

/** The count was not needed any more (its signal aborted first). */
export class CountAborted extends Error {
  constructor() {
    super("the count is no longer needed");
  }
}

interface Job {
  account: string;
  texts: string[];
  limit: number | null;
  resolve(n: number): void;
  reject(e: Error): void;
}

/**
 * Where the worker's code is: beside this file from source; in the compiled binary an extra entry
 * point of build.ts, addressed from the bundle's root (src/ or the repository): both are tried.
 */
function workerSpecs(): string[] {
  return import.meta.url.includes("$bunfs")
    ? ["./tokens/token-worker.ts", "./src/tokens/token-worker.ts"]
    : [new URL("./token-worker.ts", import.meta.url).href];
}

export class TokenCounter {
  private readonly short = new Lane(this, false);
  /**
   * Long counts run at a lower CPU priority than the serving thread, and at most
   * backgroundPercent of a core once past a short burst (see token-worker.ts, duty-cycle.ts).
   */
  private readonly long = new Lane(this, true);
  /** @internal Which of workerSpecs() to start; moves on when a worker dies before it loaded. */
  specIndex = 0;
  private closed = false;
  /** Set when no worker could be started: counting then stays on the calling thread. */
  private inlineOnly = false;

  /** Characters queued per account. */
  private readonly queued: AccountBudget;
  /** @internal The long lane's share of a core, in percent. */
  readonly backgroundPercent: number;

  constructor(
    private readonly onWarning: (message: string) => void = () => {},
    opts: CounterOptions = {},
  ) {
    this.queued = new AccountBudget(opts.maxQueuedChars ?? DEFAULT_MAX_QUEUED_CHARS);
    this.backgroundPercent = opts.backgroundPercent ?? DEFAULT_BACKGROUND_PERCENT;
  }

  /** The sum of the texts' tokens. */
  count(texts: string[], opts: CountOptions = {}): Promise<number> {
    return this.submit(texts, opts, SHORT_JOB_CHARS);
  }

  /** Queues a count; texts up to `shortChars` go to the short lane. */
  private submit(texts: string[], opts: CountOptions, shortChars: number): Promise<number> {
    if (opts.signal?.aborted) return Promise.reject(new CountAborted());
    const account = opts.account ?? "";
    const chars = textLength(texts);
    if (!this.queued.take(account, chars, opts.admission !== true)) return Promise.reject(tokenQueueFull(this.queued.cap));
    const counted = this.countQueued(account, texts, chars, opts, shortChars);
    const done = () => this.queued.give(account, chars);
    counted.then(done, done);
    return counted;
  }

  /** Characters the account has queued for counting now. */
  queuedChars(account: string): number {
    return this.queued.inUse(account);
  }

  private countQueued(account: string, texts: string[], chars: number, opts: CountOptions, shortChars = SHORT_JOB_CHARS): Promise<number> {
    const limit = opts.limit ?? Infinity;
    if (this.inlineOnly || this.closed) return countInline(texts, limit);
    const lane = chars <= shortChars ? this.short : this.long;
    return lane.count(account, texts, Number.isFinite(limit) ? limit : null, opts.signal);
  }

  /** The tokens of one text. */
  text(text: string, opts: CountOptions = {}): Promise<number> {
    return this.count([text], opts);
  }

  /**
   * A chat prompt's estimated tokens: its texts' BPE count plus template overhead and images.
   * A request waits on this count, so prompts up to SHORT_PROMPT_CHARS (a 40 KB system prompt)
   * are counted in the short lane, at the serving thread's priority.
   */
  async prompt(messages: Message[], extra: unknown[] = [], opts: CountOptions = {}): Promise<number> {
    const p = promptTexts(messages, extra);
    const overhead = promptOverhead(p);
    return overhead + (await this.submit(p.texts, { ...opts, limit: opts.limit === undefined ? undefined : opts.limit - overhead }, SHORT_PROMPT_CHARS));
  }

  /** Stops the workers; counts in flight fail, later ones run on the calling thread. */
  close(): void {
    this.closed = true;
    this.short.close();
    this.long.close();
  }

  /** @internal A new worker, or null (counting inline from now on) when none can start. */
  startWorker(lane: Lane): Worker | null {
    const specs = workerSpecs();
    while (!this.inlineOnly && this.specIndex < specs.length) {
      try {
        const worker = new Worker(specs[this.specIndex]!);
        lane.attach(worker);
        // An idle worker must not keep a CLI command (or a test) alive.
        (worker as Worker & { unref?(): void }).unref?.();
        return worker;
      } catch {
        this.specIndex++;
      }
    }
    if (!this.inlineOnly) this.onWarning("token counting runs on the main thread: its worker could not start");
    this.inlineOnly = true;
    return null;
  }

  /** @internal Jobs of a worker that never started: counted again, elsewhere. */
  retry(job: Job): void {
    this.countQueued(job.account, job.texts, textLength(job.texts), { limit: job.limit ?? undefined }).then(job.resolve, job.reject);
  }
}

/** One worker thread and the jobs sent to it. */
class Lane {
  private worker: Worker | null = null;
  private started = false;
  private readonly pending = new Map<number, Job>();
  private nextId = 1;

  constructor(
    private readonly counter: TokenCounter,
    private readonly background: boolean,
  ) {}

  count(account: string, texts: string[], limit: number | null, signal?: AbortSignal): Promise<number> {
    const worker = this.worker ?? (this.worker = this.counter.startWorker(this));
    if (!worker) return countInline(texts, limit ?? Infinity);
    const id = this.nextId++;
    // The texts are kept only to be counted again elsewhere should the worker never start: once
    // it has, a long job's text is not held here for as long as it takes to count (see
    // docs/architecture.md, "Memory per stream"). Nor by a closure: the reply's callbacks are made
    // where `texts` is not in scope (awaitReply), since a closure keeps its whole scope alive.
    const counted = this.awaitReply(id, { account, texts: this.started ? [] : texts, limit }, signal);
    if (textLength(texts) <= PART_CHARS * 2) worker.postMessage({ id, account, texts, limit } satisfies TokenJob);
    else void this.sendInParts(worker, id, account, texts, limit);
    return counted;
  }

  /** Registers job `id`; resolves with its count. */
  private awaitReply(id: number, job: Omit<Job, "resolve" | "reject">, signal: AbortSignal | undefined): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const onAbort = () => {
        if (!this.pending.delete(id)) return;
        this.worker?.postMessage({ cancel: id } satisfies TokenJob);
        reject(new CountAborted());
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => signal?.removeEventListener("abort", onAbort);
      this.pending.set(id, { ...job, resolve: (n) => (done(), resolve(n)), reject: (e) => (done(), reject(e)) });
    });
  }

  private async sendInParts(worker: Worker, id: number, account: string, texts: string[], limit: number | null): Promise<void> {
    let last: string | null = null;
    for (const part of parts(texts)) {
      if (last !== null) {
        worker.postMessage({ id, account, part: last, more: true, limit } satisfies TokenJob);
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Dropped meanwhile (its caller left, the worker died): the worker forgets the parts.
        if (!this.pending.has(id) || this.worker !== worker) return;
      }
      last = part;
    }
    worker.postMessage({ id, account, part: last ?? "", more: false, limit } satisfies TokenJob);
  }

  attach(worker: Worker): void {
    this.started = false;
    if (this.background) worker.postMessage({ background: true, percent: this.counter.backgroundPercent } satisfies TokenJob);
    worker.onmessage = (e: MessageEvent<TokenReply>) => this.receive(worker, e.data);
    worker.onerror = (e) => this.crashed(worker, new Error(`token worker failed: ${e.message}`));
    worker.addEventListener("close", () => this.crashed(worker, new Error("token worker exited")));
  }

  close(): void {
    const err = new Error("token counter closed");
    for (const job of this.pending.values()) job.reject(err);
    this.pending.clear();
    this.worker?.terminate();
    this.worker = null;
  }

  private receive(worker: Worker, r: TokenReply): void {
    if (worker !== this.worker) return;
    if ("ready" in r) {
      this.started = true;
      return;
    }
    const job = this.pending.get(r.id);
    if (!job) return;
    this.pending.delete(r.id);
    if ("count" in r) job.resolve(r.count);
    else job.reject(new Error(r.error));
  }

  /**
   * The worker died. If it never started (its file is not where this build looked), its jobs are
   * not at fault: they are counted again with the next address, or inline. Otherwise they fail,
   * and the next count starts a fresh worker.
   */
  private crashed(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    worker.terminate();
    const jobs = [...this.pending.values()];
    this.pending.clear();
    if (this.started) {
      for (const job of jobs) job.reject(err);
      return;
    }
    this.counter.specIndex++;
    for (const job of jobs) this.counter.retry(job);
  }
}

/**
 * The texts in parts of at most about PART_CHARS, each cut before a space that precedes a letter
 * (where o200k's pre-tokenizer starts a new piece anyway, so the parts' counts add up to the
 * text's), or, with no such point in the second half of a part, at its end.
 */
function* parts(texts: string[]): Generator<string> {
  for (const text of texts) {
    let start = 0;
    while (text.length - start > PART_CHARS) {
      let cut = start + PART_CHARS;
      for (let i = cut; i > start + PART_CHARS / 2; i--) {
        if (text.charCodeAt(i) === 32 && isLetterAt(text, i + 1)) {
          cut = i;
          break;
        }
      }
      const c = text.charCodeAt(cut - 1);
      if (cut === start + PART_CHARS && c >= 0xd800 && c <= 0xdbff) cut--;
      yield text.slice(start, cut);
      start = cut;
    }
    yield text.slice(start);
  }
}

function countInline(texts: string[], limit: number): Promise<number> {
  try {
    return Promise.resolve(countTexts(texts, limit));
  } catch (e) {
    return Promise.reject(e);
  }
}
