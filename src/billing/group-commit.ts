/**
 * Group commit: writes queued during one turn of the event loop share one SQLite transaction,
 * so one fsync covers many settlements. Each write runs in its own savepoint, so one failing
 * write rolls back alone and rejects only its own promise.
 *
 * Durability without blocking: on a WAL database the batch is committed with synchronous=NORMAL
 * (written to the WAL, not yet synced) and the WAL file is then fsynced on the thread pool; the
 * writes' promises resolve only after that fsync. That is exactly what synchronous=FULL does in
 * WAL mode (sync the WAL after each commit), but the event loop keeps serving requests while the
 * disk works, and fsyncs that overlap are coalesced. Measured with test/bench/gateway.bench.ts:
 * the blocking fsync cost the gateway about 40% of its throughput.
 */
import { closeSync, fsync, fsyncSync, openSync } from "node:fs";
import type { Store } from "../store/database";

interface Pending<T> {
  write: () => T;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  private queue: Pending<any>[] = [];
  private scheduled = false;
  /** Observed batch sizes, for metrics and the benchmark. */
  batches = 0;
  writes = 0;
  /** The WAL file's descriptor, once it exists (null: not a WAL database, or not opened yet). */
  private walFd: number | null = null;
  private readonly walPath: string | null;
  /** The connection's own synchronous level, restored after each deferred-sync commit. */
  private readonly synchronous: number;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;

  /** maxBatch 1 turns group commit off (one transaction per write), for comparison. */
  constructor(private readonly db: Store, private readonly maxBatch = 512) {
    const mode = (db.query("PRAGMA journal_mode").get() as { journal_mode?: string } | null)?.journal_mode;
    this.synchronous = (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    // Only a connection that syncs every commit (FULL=2, EXTRA=3) has a sync worth moving off the loop.
    const syncsEachCommit = this.synchronous >= 2;
    this.walPath = syncsEachCommit && mode === "wal" && db.filename && db.filename !== ":memory:" ? `${db.filename}-wal` : null;
  }

  submit<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.commitQueued(false));
      }
    });
  }

  /** Commits everything queued now and syncs it before returning (shutdown). */
  flush(): void {
    this.commitQueued(true);
    if (this.walFd !== null) {
      fsyncSync(this.walFd);
      closeSync(this.walFd);
      this.walFd = null;
    }
  }

  private commitQueued(blocking: boolean): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      const deferSync = !blocking && this.walPath !== null;
      let outcomes: Outcome[];
      try {
        outcomes = this.runBatch(batch, deferSync);
      } catch (error) {
        // The commit itself failed: nothing in this batch is durable.
        for (const p of batch) p.reject(error);
        continue;
      }
      this.batches++;
      this.writes += batch.length;
      const settle = () =>
        batch.forEach((p, i) => {
          const o = outcomes[i]!;
          if (o.ok) p.resolve(o.value);
          else p.reject(o.error);
        });
      if (deferSync) this.durable().then(settle, (error) => batch.forEach((p) => p.reject(error)));
      else settle();
    }
  }

  private runBatch(batch: Pending<any>[], deferSync: boolean): Outcome[] {
    const outcomes: Outcome[] = [];
    const run = () =>
      this.db
        .transaction(() => {
          for (const p of batch) {
            try {
              outcomes.push({ ok: true, value: this.db.transaction(p.write)() });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
        })
        .immediate();
    if (!deferSync) {
      run();
      return outcomes;
    }
    // Only this commit skips the in-line sync; durable() syncs it before anyone hears of it.
    this.db.run("PRAGMA synchronous = NORMAL");
    try {
      run();
    } finally {
      this.db.run(`PRAGMA synchronous = ${this.synchronous}`);
    }
    return outcomes;
  }

  /**
   * Resolves once an fsync of the WAL that started after this call has finished. One fsync runs at
   * a time; commits made while it runs share the next one.
   */
  private durable(): Promise<void> {
    if (!this.syncing) {
      this.syncing = this.fsyncWal().finally(() => {
        this.syncing = null;
      });
      return this.syncing;
    }
    if (!this.nextSync) {
      this.nextSync = this.syncing.then(
        () => {
          this.nextSync = null;
          return this.durable();
        },
        () => {
          this.nextSync = null;
          return this.durable();
        },
      );
    }
    return this.nextSync;
  }

  private fsyncWal(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      try {
        // The WAL exists once the first commit wrote to it; SQLite keeps the same file (it only
        // rewinds it) while any connection is open, so one descriptor serves for the process.
        this.walFd ??= openSync(this.walPath!, "r+");
      } catch (error) {
        reject(error);
        return;
      }
      fsync(this.walFd, (error) => (error ? reject(error) : resolve()));
    });
  }
}
