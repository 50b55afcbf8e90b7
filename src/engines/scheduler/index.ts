/**
 * A generic micro-batching scheduler for in-process models (embeddings, speech).
 *
 * Jobs from many requests wait in a bounded queue and run together: a batch is bounded by
 * maxBatchSize jobs and maxBatchTokens (sum of costs), jobs of similar cost are grouped to limit
 * padding, and the oldest job waits at most maxWaitMs for company (not at all while recent batches
 * found none, see waitForCompany). A priority lane (turbo) is
 * served first and does not wait for company. One batch runs at a time per scheduler: `run` is
 * expected to be asynchronous (the engines run ONNX Runtime in a worker thread, see
 * ../onnx-worker.ts), so the event loop stays free to accept and queue requests meanwhile. A job whose AbortSignal fires
 * while queued leaves the queue at once.
 *
 * Accounts take turns (batch.ts fairOrder): each batch is anchored on the oldest job of the
 * account served least recently, so one account's backlog delays another's job by about one batch,
 * not by the backlog; and one account may hold at most maxQueuePerAccount of the queued jobs (a
 * 429 past that, engineQueueFullForAccount).
 */
import type { MetricsRegistry } from "../../metrics/registry";
import { batchIsFull, fairOrder, selectBatch } from "./batch";
import { engineQueueFullForAccount } from "../../errors";
import { JobAbortedError, QueueFullError, SchedulerClosedError } from "./errors";
import { SchedulerMetrics } from "./metrics";

export { QueueFullError, JobAbortedError, SchedulerClosedError } from "./errors";

/** The default of SWITCHYARD_ENGINE_QUEUE_ACCOUNT_PERCENT. */
export const DEFAULT_ACCOUNT_QUEUE_PERCENT = 50;

/** Jobs one account may queue: `percent` of the model's queue, at least one. */
export function accountShare(maxQueue: number, percent: number): number {
  return Math.max(1, Math.floor((maxQueue * percent) / 100));
}

export interface SchedulerOptions<I, O> {
  /** Label in metrics and errors, e.g. the model id. */
  name: string;
  maxBatchSize: number;
  maxBatchTokens: number;
  maxWaitMs: number;
  maxQueue: number;
  /** Jobs one account may have queued (maxQueue unless told); admitted jobs are not refused. */
  maxQueuePerAccount?: number;
  /** Runs one batch; must resolve to one output per input, in the same order. */
  run(batch: I[]): Promise<O[]>;
  metrics?: MetricsRegistry;
}

export interface SubmitOptions {
  /** Size of the job in the scheduler's unit (tokens for embeddings). */
  cost: number;
  /** Turbo: served before the normal lane and dispatched without waiting for company. */
  priority?: boolean;
  signal?: AbortSignal;
  /** Whose job it is: accounts take turns, and each may queue at most maxQueuePerAccount jobs. */
  account?: string;
  /**
   * A later part of work already admitted (the next sentence of a speech stream that is sending
   * audio): never refused for a full queue, so a stream the client is already receiving is not
   * cut off by newcomers. Admitted work keeps at most one such job queued, so the queue stays bounded.
   */
  admitted?: boolean;
}

interface Job<I, O> {
  input: I;
  account: string;
  cost: number;
  seq: number;
  priority: boolean;
  enqueuedAt: number;
  resolve(o: O): void;
  reject(e: unknown): void;
  detach(): void;
}

export class Scheduler<I, O> {
  private readonly priorityLane: Job<I, O>[] = [];
  private readonly normalLane: Job<I, O>[] = [];
  private running = false;
  private closed = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private seq = 0;
  /**
   * Whether an idle scheduler holds a lone job for company. Cleared when a batch ran alone (the
   * wait found nobody: with one client, waiting is pure added latency), set again as soon as a
   * batch forms with company (concurrent demand is back). Jobs arriving while a batch runs are
   * batched regardless; this only concerns the idle case.
   */
  private waitForCompany = true;
  /** A pump is queued for the end of this turn (pumpAfterThisTurn). */
  private pumpQueued = false;
  private readonly metrics: SchedulerMetrics | null;
  /** Jobs queued per account. */
  private readonly perAccount = new Map<string, number>();
  /** Account → the number of the batch it last had a job in (see fairOrder). */
  private readonly served = new Map<string, number>();
  private batches = 0;

  constructor(private readonly o: SchedulerOptions<I, O>) {
    if (!(o.maxBatchSize >= 1) || !(o.maxBatchTokens >= 1) || !(o.maxQueue >= 1) || !(o.maxWaitMs >= 0)) {
      throw new RangeError(`${o.name}: maxBatchSize, maxBatchTokens and maxQueue must be ≥ 1 and maxWaitMs ≥ 0`);
    }
    this.metrics = o.metrics ? new SchedulerMetrics(o.metrics, o.name) : null;
  }

  /** Jobs waiting (not counting the batch being run). */
  get queued(): number {
    return this.priorityLane.length + this.normalLane.length;
  }

  /** Jobs the account has waiting. */
  queuedFor(account: string): number {
    return this.perAccount.get(account) ?? 0;
  }

  /** Jobs one account may have queued. */
  get maxQueuePerAccount(): number {
    return this.o.maxQueuePerAccount ?? this.o.maxQueue;
  }

  submit(input: I, opts: SubmitOptions): Promise<O> {
    if (this.closed) return Promise.reject(new SchedulerClosedError(this.o.name));
    if (opts.signal?.aborted) return Promise.reject(new JobAbortedError(this.o.name));
    if (!opts.admitted && this.queued >= this.o.maxQueue) {
      this.metrics?.rejected("queue_full");
      return Promise.reject(new QueueFullError(this.o.name, this.o.maxQueue));
    }
    const account = opts.account ?? "";
    if (!opts.admitted && this.queuedFor(account) >= this.maxQueuePerAccount) {
      this.metrics?.rejected("account_queue_full");
      return Promise.reject(engineQueueFullForAccount(this.o.name, this.maxQueuePerAccount));
    }
    return new Promise<O>((resolve, reject) => {
      const signal = opts.signal;
      const onAbort = () => {
        if (this.remove(job)) {
          this.metrics?.rejected("aborted");
          reject(new JobAbortedError(this.o.name));
        }
      };
      const job: Job<I, O> = {
        input,
        account,
        cost: Math.max(0, opts.cost),
        seq: this.seq++,
        priority: opts.priority === true,
        enqueuedAt: performance.now(),
        resolve,
        reject,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      (job.priority ? this.priorityLane : this.normalLane).push(job);
      this.perAccount.set(account, this.queuedFor(account) + 1);
      this.metrics?.depth(this.queued);
      this.pumpAfterThisTurn();
    });
  }

  /**
   * The queue is looked at once the current synchronous run of submits is over, not at each: the
   * inputs of one request are submitted in one loop, and an idle scheduler that does not wait for
   * company would otherwise start a batch with the first alone and run the rest in the next one
   * (twice the latency, and a model whose numbers depend on its batch would answer the same request
   * differently by what ran before it).
   */
  private pumpAfterThisTurn(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    queueMicrotask(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** Rejects every queued job; a batch already running finishes and delivers its results. */
  close(): void {
    this.closed = true;
    this.clearTimer();
    for (const job of [...this.priorityLane, ...this.normalLane]) {
      job.detach();
      job.reject(new SchedulerClosedError(this.o.name));
    }
    this.priorityLane.length = 0;
    this.normalLane.length = 0;
    this.perAccount.clear();
    this.metrics?.depth(0);
  }

  private remove(job: Job<I, O>): boolean {
    const lane = job.priority ? this.priorityLane : this.normalLane;
    const i = lane.indexOf(job);
    if (i < 0) return false;
    lane.splice(i, 1);
    this.dequeued(job);
    job.detach();
    this.metrics?.depth(this.queued);
    if (this.queued === 0) this.clearTimer();
    return true;
  }

  /** A job left the queue (to run, or withdrawn). */
  private dequeued(job: Job<I, O>): void {
    const left = this.queuedFor(job.account) - 1;
    if (left > 0) this.perAccount.set(job.account, left);
    else this.perAccount.delete(job.account);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Starts a batch now if one should start, or arms the timer for when the oldest job's wait ends. */
  private pump(): void {
    if (this.running || this.closed || this.queued === 0) return;
    const limits = { maxBatchSize: this.o.maxBatchSize, maxBatchTokens: this.o.maxBatchTokens };
    const oldest = Math.min(this.priorityLane[0]?.enqueuedAt ?? Infinity, this.normalLane[0]?.enqueuedAt ?? Infinity);
    const waited = performance.now() - oldest;
    const ready =
      this.priorityLane.length > 0 ||
      !this.waitForCompany ||
      waited >= this.o.maxWaitMs ||
      batchIsFull(this.normalLane, limits);
    if (!ready) {
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.pump();
      }, Math.max(0, this.o.maxWaitMs - waited));
      return;
    }
    this.clearTimer();
    const batch = selectBatch(fairOrder(this.priorityLane, this.served), fairOrder(this.normalLane, this.served), limits);
    this.waitForCompany = batch.length > 1;
    this.batches++;
    for (const job of batch) {
      const lane = job.priority ? this.priorityLane : this.normalLane;
      lane.splice(lane.indexOf(job), 1);
      this.dequeued(job);
      this.served.set(job.account, this.batches);
      job.detach();
    }
    // An account with nothing queued that was not in this batch is forgotten (it comes first when
    // it returns): the map stays as small as the accounts waiting or just served.
    for (const [account, at] of this.served) if (at < this.batches && this.queuedFor(account) === 0) this.served.delete(account);
    void this.execute(batch);
  }

  private async execute(batch: Job<I, O>[]): Promise<void> {
    this.running = true;
    const started = performance.now();
    this.metrics?.batchStarted(batch.length, batch.reduce((n, j) => n + j.cost, 0), this.queued);
    for (const job of batch) this.metrics?.waited((started - job.enqueuedAt) / 1000);
    try {
      const outputs = await this.o.run(batch.map((j) => j.input));
      if (!Array.isArray(outputs) || outputs.length !== batch.length) {
        throw new Error(`${this.o.name}: run returned ${Array.isArray(outputs) ? outputs.length : "no"} outputs for ${batch.length} inputs`);
      }
      batch.forEach((job, i) => job.resolve(outputs[i]!));
    } catch (err) {
      for (const job of batch) job.reject(err);
    } finally {
      this.metrics?.batchFinished((performance.now() - started) / 1000);
      this.running = false;
      this.pump();
    }
  }
}
