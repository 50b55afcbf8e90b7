/**
 * Group commit: writes queued during one turn of the event loop share one SQLite transaction,
 * so one fsync covers many settlements. Each write runs in its own savepoint, so one failing
 * write rolls back alone and rejects only its own promise.
 */
import type { Store } from "../store/database";

interface Pending<T> {
  write: () => T;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

export class GroupCommit {
  private queue: Pending<any>[] = [];
  private scheduled = false;
  /** Observed batch sizes, for metrics and the benchmark. */
  batches = 0;
  writes = 0;

  /** maxBatch 1 turns group commit off (one transaction per write), for comparison. */
  constructor(private readonly db: Store, private readonly maxBatch = 512) {}

  submit<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs everything queued now; called by the scheduler and at shutdown. */
  flush(): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
      try {
        this.db.transaction(() => {
          for (const p of batch) {
            try {
              outcomes.push({ ok: true, value: this.db.transaction(p.write)() });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
        }).immediate();
      } catch (error) {
        // The commit itself failed: nothing in this batch is durable.
        for (const p of batch) p.reject(error);
        continue;
      }
      this.batches++;
      this.writes += batch.length;
      batch.forEach((p, i) => {
        const o = outcomes[i]!;
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
    }
  }
}
