/**
 * Batches one kind of write (posts, voids, slot releases) so that many requests share one round
 * trip and one commit: items submitted while `maxInFlight` batches are running wait and go out
 * together in the next one (at most `maxBatch` items). Alone, an item goes out at once; under
 * load, batches grow by themselves — no timer adds latency.
 *
 * Each batch is one statement, hence one transaction. Per-item outcomes come back from it (an
 * item the database refuses, like a post above its hold, is an Error for that item alone).
 * When the whole statement fails:
 *   - the database cannot take it now (StoreUnavailable): the batch is retried with backoff
 *     until `retryMs` has passed — every write batched here is idempotent, so a retry after an
 *     unknown outcome is safe, and the items learn `maybeApplied` to tell a repeat of their own
 *     lost first answer from a genuine repeat;
 *   - anything else (one bad item, say): each item is run alone, so only the bad one fails.
 */
import { StoreUnavailable } from "../../billing/ledger-store";
import { outcomeUnknown } from "./database";

export interface BatchOptions {
  maxBatch: number;
  maxInFlight: number;
  /** How long a batch is retried while the database cannot take it (0: not retried). */
  retryMs: number;
}

/** Runs one batch; `maybeApplied[i]` is true when an earlier attempt of item i may have committed. */
export type BatchRunner<I, O> = (items: I[], maybeApplied: boolean[]) => Promise<(O | Error)[]>;

interface Waiter<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

export class WriteBatcher<I, O> {
  private queue: Waiter<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly idle: (() => void)[] = [];
  /** Statements run and items carried, for metrics and the benchmark. */
  batches = 0;
  items = 0;

  constructor(private readonly runBatch: BatchRunner<I, O>, private readonly opts: BatchOptions) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Items submitted in the same turn of the event loop join the same batch.
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  /** Resolves once nothing is queued or running (shutdown). */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  private pump(): void {
    while (this.inFlight < this.opts.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.opts.maxBatch);
      this.inFlight++;
      void this.run(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.pump();
        else if (this.inFlight === 0) for (const r of this.idle.splice(0)) r();
      });
    }
  }

  private async run(batch: Waiter<I, O>[]): Promise<void> {
    const items = batch.map((w) => w.item);
    const maybeApplied = items.map(() => false);
    let outcomes: (O | Error)[];
    try {
      outcomes = await this.attempt(items, maybeApplied);
    } catch (e) {
      if (e instanceof StoreUnavailable || batch.length === 1) {
        for (const w of batch) w.reject(e);
        return;
      }
      // Not the database's state but something in the batch: find the item, fail only it. One
      // at a time, in order, so items that conflict with each other meet in the same order.
      for (let i = 0; i < batch.length; i++) {
        const w = batch[i]!;
        try {
          const [o] = await this.attempt([w.item], [maybeApplied[i]!]);
          if (o instanceof Error) w.reject(o);
          else w.resolve(o as O);
        } catch (err) {
          w.reject(err);
        }
      }
      return;
    }
    batch.forEach((w, i) => {
      const o = outcomes[i];
      if (o instanceof Error) w.reject(o);
      else w.resolve(o as O);
    });
  }

  /** One batch, retried while the database cannot take it, up to retryMs. */
  private async attempt(items: I[], maybeApplied: boolean[]): Promise<(O | Error)[]> {
    const deadline = Date.now() + this.opts.retryMs;
    let delay = 50;
    for (;;) {
      try {
        this.batches++;
        this.items += items.length;
        const out = await this.runBatch(items, maybeApplied);
        if (out.length !== items.length) throw new Error(`batch returned ${out.length} outcomes for ${items.length} items`);
        return out;
      } catch (e) {
        if (!(e instanceof StoreUnavailable)) throw e;
        if (outcomeUnknown(e)) maybeApplied.fill(true);
        if (Date.now() + delay > deadline) throw e;
        await Bun.sleep(delay);
        delay = Math.min(delay * 2, 1000);
      }
    }
  }
}
