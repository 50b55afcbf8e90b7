/**
 * Group commit: writes queued during one turn of the event loop share one SQLite transaction,
 * so one fsync covers many settlements. Each write runs in its own savepoint, so one failing
 * write rolls back alone and rejects only its own promise. The queue is strictly in order, so a
 * write queued before another is always committed before (or with) it.
 *
 * Two kinds of write share the queue: submit() for writes whose caller waits until they are
 * durable (settlements), and enqueue() for writes nobody waits for (credit holds: a hold lost in
 * a crash is voided on restart anyway). A batch of enqueued writes alone needs no fsync of its
 * own; the next durable batch's fsync covers it, since it syncs the whole WAL file.
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
  /** Absent for enqueue()d writes: nobody waits for them. */
  resolve?: (value: T) => void;
  reject?: (err: unknown) => void;
  /** Called synchronously once the batch committed (ok) or this write or the batch failed. */
  after?: (ok: boolean) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  private queue: Pending<any>[] = [];
  private scheduled = false;
  /** Observed batch sizes, for metrics and the benchmark. */
  batches = 0;
  /** Writes that were waited for (submit); enqueue()d writes are counted in `background`. */
  writes = 0;
  background = 0;
  /** The WAL file's descriptor, once it exists (null: not a WAL database, or not opened yet). */
  private walFd: number | null = null;
  private readonly walPath: string | null;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;
  /**
   * Prepared once: bun:sqlite's db.transaction() builds a new wrapper per call, which cost more
   * than the writes themselves at gateway rates.
   */
  private readonly sql;

  /** maxBatch 1 turns group commit off (one transaction per write), for comparison. */
  constructor(private readonly db: Store, private readonly maxBatch = 512) {
    const mode = (db.query("PRAGMA journal_mode").get() as { journal_mode?: string } | null)?.journal_mode;
    /** The connection's own synchronous level, restored after each deferred-sync commit. */
    const synchronous = (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    // Only a connection that syncs every commit (FULL=2, EXTRA=3) has a sync worth moving off the loop.
    const syncsEachCommit = synchronous >= 2;
    this.walPath = syncsEachCommit && mode === "wal" && db.filename && db.filename !== ":memory:" ? `${db.filename}-wal` : null;
    this.sql = {
      begin: db.prepare("BEGIN IMMEDIATE"),
      commit: db.prepare("COMMIT"),
      rollback: db.prepare("ROLLBACK"),
      savepoint: db.prepare("SAVEPOINT group_commit_write"),
      releaseSavepoint: db.prepare("RELEASE group_commit_write"),
      rollbackSavepoint: db.prepare("ROLLBACK TO group_commit_write"),
      deferSync: db.prepare("PRAGMA synchronous = NORMAL"),
      restoreSync: db.prepare(`PRAGMA synchronous = ${synchronous}`),
    };
  }

  /**
   * Queues a write; resolves with its result once it is durable (rejects if it failed). `after`
   * hears synchronously, once the batch committed, whether this write is in it.
   */
  submit<T>(write: () => T, after?: (ok: boolean) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => this.push({ write, resolve, reject, after }));
  }

  /**
   * Queues a write nobody waits for; it is committed in order with the others but synced only by
   * the next durable commit. `after` hears synchronously whether it committed.
   */
  enqueue(write: () => void, after?: (ok: boolean) => void): void {
    this.push({ write, after });
  }

  private push(p: Pending<any>): void {
    this.queue.push(p);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.commitQueued(false));
    }
  }

  /**
   * Commits everything queued now, without waiting for the next turn; waiters still hear only
   * after the fsync. For rare writes whose effect must be visible at once (releases).
   */
  commitNow(): void {
    this.commitQueued(false);
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
      const batch = this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch);
      this.queue = batch === this.queue ? [] : this.queue.slice(this.maxBatch);
      const deferSync = !blocking && this.walPath !== null;
      let outcomes: Outcome[];
      try {
        outcomes = this.runBatch(batch, deferSync);
      } catch (error) {
        // The commit itself failed: nothing in this batch is durable.
        for (const p of batch) {
          p.after?.(false);
          p.reject?.(error);
        }
        continue;
      }
      this.batches++;
      let waited = 0;
      for (let i = 0; i < batch.length; i++) {
        const p = batch[i]!;
        p.after?.(outcomes[i]!.ok);
        if (p.resolve) waited++;
      }
      this.writes += waited;
      this.background += batch.length - waited;
      // Nobody waits on this batch: the next durable batch's fsync covers it.
      if (waited === 0) continue;
      const settle = () => {
        for (let i = 0; i < batch.length; i++) {
          const p = batch[i]!;
          const o = outcomes[i]!;
          if (o.ok) p.resolve?.(o.value);
          else p.reject?.(o.error);
        }
      };
      if (deferSync) this.durable().then(settle, (error) => batch.forEach((p) => p.reject?.(error)));
      else settle();
    }
  }

  private runBatch(batch: Pending<any>[], deferSync: boolean): Outcome[] {
    const outcomes: Outcome[] = [];
    const { sql } = this;
    // Only this commit skips the in-line sync; durable() syncs it before anyone hears of it.
    if (deferSync) sql.deferSync.run();
    try {
      sql.begin.run();
      try {
        for (const p of batch) {
          sql.savepoint.run();
          try {
            const value = p.write();
            sql.releaseSavepoint.run();
            outcomes.push({ ok: true, value });
          } catch (error) {
            sql.rollbackSavepoint.run();
            sql.releaseSavepoint.run();
            outcomes.push({ ok: false, error });
          }
        }
        sql.commit.run();
      } catch (error) {
        if (this.db.inTransaction) sql.rollback.run();
        throw error;
      }
    } finally {
      if (deferSync) sql.restoreSync.run();
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
      const next = () => {
        this.nextSync = null;
        return this.durable();
      };
      this.nextSync = this.syncing.then(next, next);
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
