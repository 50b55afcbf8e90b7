/**
 * Group commit: writes queued during one turn of the event loop share one SQLite transaction,
 * so one fsync covers many settlements. A write that breaks a rule rolls back alone and rejects
 * only its own promise: the batch is then run again with a savepoint per write (see runBatch).
 * The queue is strictly in order, so a write queued before another is always committed before
 * (or with) it.
 *
 * A write's caller waits either for the COMMIT (holds and voids: a hold lost in a crash is voided
 * on restart anyway) or for the fsync after it (charges, credits). A batch of commit-only writes
 * needs no fsync of its own; the next durable batch's fsync covers it, since it syncs the whole WAL.
 *
 * Durability without blocking: on a WAL database the batch is committed with synchronous=NORMAL
 * (written to the WAL, not yet synced) and the WAL file is then fsynced on the thread pool; durable
 * writes resolve only after that fsync. That is what synchronous=FULL does in WAL mode, but the
 * event loop keeps serving while the disk works, and fsyncs that overlap are coalesced.
 *
 * A failed fsync is final, as in PostgreSQL: once the kernel reported a write-back error, the
 * pages it could not write may already count as clean, so a later fsync of the same descriptor
 * can succeed with that data never on disk, and this connection's cache may show rows the file
 * lacks. So the writes waiting for that fsync are rejected (never acknowledged: they may or may
 * not be on disk), every queued and later write is refused, the descriptor is closed and never
 * synced again, and `onFatal` is told: the server logs one line and stops, and a restart reads
 * the database afresh from what really is on disk (see docs/money.md). A commit that fails with
 * an I/O error (SQLITE_IOERR, e.g. the in-line fsync of a blocking flush) is final the same way.
 *
 * Waiting for the write lock never blocks the event loop: the serving connection has
 * busy_timeout 0, so BEGIN IMMEDIATE fails at once while another process (the CLI) writes. The
 * batch then goes back to the front of the queue and is retried on a timer with backoff; a write
 * that has waited `lockWaitMs` in all is rejected with StoreUnavailable("locked").
 *
 * Storage failures (disk full, I/O error, read-only) fail the whole batch: SQLite may already have
 * rolled the transaction back, so no write of it can be trusted to commit. A full disk or a lock
 * is not final: the next batch tries again.
 */
import type { Store } from "../database";
import { StoreUnavailable } from "../../billing/ledger-store";
import { isBusy, isIoError, storageFailure } from "./failures";
import { WalSync, type FsyncFn } from "./wal-sync";

/** What the caller of a write waits for. */
export type WriteWait = "commit" | "durable";

interface Pending<T> {
  write: () => T;
  wait: WriteWait;
  /** Called once the write's transaction is committed, before it is synced (and only if it succeeded). */
  committed?: () => void;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
  /** Date.now() when queued: the lock wait is bounded per write. */
  queuedAt: number;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface GroupCommitOptions {
  /** 1 turns group commit off (one transaction per write), for comparison. */
  maxBatch?: number;
  /** How long a write may wait for another connection's write lock before it fails. */
  lockWaitMs?: number;
  /** Tests inject a failing fsync here; the product uses node:fs's. */
  fsync?: FsyncFn;
  /** Failures no write's promise can carry (writes expired waiting for a lock; a failed fsync). */
  onFailure?: (e: StoreUnavailable) => void;
  /** A failed fsync or an I/O error on commit: nothing more is written; the owner must stop or reopen. */
  onFatal?: (e: StoreUnavailable) => void;
  batchState?: BatchState;
}

/**
 * What a batch's writes build up in memory (charge-batch.ts): `flush` writes it inside the
 * transaction, before COMMIT or, with a savepoint per write, after each write (a throw fails the
 * batch or that write, as a write's own would); `discard` forgets it on a rollback.
 */
export interface BatchState {
  flush(): void;
  discard(): void;
}

export const DEFAULT_LOCK_WAIT_MS = 2_000;
/** Retries while locked: 1, 2, 4, ... ms, at most this long apart. */
const MAX_LOCK_RETRY_MS = 50;

export class GroupCommit {
  private queue: Pending<any>[] = [];
  private scheduled = false;
  private lockRetry: ReturnType<typeof setTimeout> | null = null;
  private lockAttempts = 0;
  private closed = false;
  /** Set once an fsync or a commit failed with an I/O error: nothing is written or synced again. */
  private broken: StoreUnavailable | null = null;
  /** Observed batch sizes, for metrics and the benchmark. */
  batches = 0;
  /** Writes that waited for durability; commit-only writes are counted in `background`. */
  writes = 0;
  background = 0;
  /** Batches run a second time, one savepoint per write, because a write in them threw. */
  replays = 0;
  /** The WAL's fsync off the event loop (null: not a WAL database, or one that does not sync each commit). */
  private readonly wal: WalSync | null;
  private readonly maxBatch: number;
  private readonly lockWaitMs: number;
  private readonly onFailure: (e: StoreUnavailable) => void;
  private readonly onFatal: (e: StoreUnavailable) => void;
  private readonly state: BatchState | null;
  /**
   * Prepared once: bun:sqlite's db.transaction() builds a new wrapper per call, which cost more
   * than the writes themselves at gateway rates.
   */
  private readonly sql;

  constructor(private readonly db: Store, options: GroupCommitOptions = {}) {
    this.maxBatch = options.maxBatch ?? 512;
    this.lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
    this.onFailure = options.onFailure ?? (() => {});
    this.onFatal = options.onFatal ?? (() => {});
    this.state = options.batchState ?? null;
    const mode = (db.query("PRAGMA journal_mode").get() as { journal_mode?: string } | null)?.journal_mode;
    /** The connection's own synchronous level, restored after each deferred-sync commit. */
    const synchronous = (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    // Only a connection that syncs every commit (FULL=2, EXTRA=3) has a sync worth moving off the loop.
    const syncsEachCommit = synchronous >= 2;
    this.wal = syncsEachCommit && mode === "wal" && db.filename && db.filename !== ":memory:" ? new WalSync(`${db.filename}-wal`, options.fsync) : null;
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
   * Queues a write; resolves with its result once committed (`commit`) or fsynced too (`durable`).
   * `committed` runs synchronously right after the commit of a write that succeeded — before its
   * sync, which may still fail (then the store stops: nothing after it is written).
   */
  submit<T>(write: () => T, wait: WriteWait = "durable", committed?: () => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) {
        reject(this.broken ?? new StoreUnavailable("io", "the store is closed"));
        return;
      }
      this.queue.push({ write, wait, committed, resolve, reject, queuedAt: Date.now() });
      if (!this.scheduled && this.lockRetry === null) {
        this.scheduled = true;
        setImmediate(() => this.commitQueued(false));
      }
    });
  }

  /**
   * Commits everything queued now and syncs it before returning (shutdown). Lock waits block here
   * (up to lockWaitMs): nothing else runs at shutdown.
   */
  flush(): void {
    this.clearLockRetry();
    // After a failed fsync nothing more is written, and syncing again would prove nothing.
    if (this.broken) return;
    if (this.queue.length > 0) {
      const previous = (this.db.query("PRAGMA busy_timeout").get() as { timeout: number }).timeout;
      this.db.run(`PRAGMA busy_timeout = ${Math.max(previous, this.lockWaitMs)}`);
      try {
        this.commitQueued(true);
      } finally {
        this.db.run(`PRAGMA busy_timeout = ${previous}`);
      }
    }
    this.wal?.syncBlocking();
  }

  /** Whether an fsync or a commit failed with an I/O error (every write is refused since). */
  get failedFatally(): StoreUnavailable | null {
    return this.broken;
  }

  /** Flushes, then refuses further writes. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.wal?.close(new StoreUnavailable("io", "the store is closed"));
  }

  /**
   * Drops every queued write unwritten, as a crash would (their promises reject), and refuses
   * further writes. Used only to simulate a crash; the process then reopens the database.
   */
  abandon(): void {
    this.closed = true;
    this.clearLockRetry();
    const dropped = this.queue;
    this.queue = [];
    const gone = new StoreUnavailable("io", "the process stopped before this write");
    for (const p of dropped) p.reject(gone);
    this.wal?.close(gone);
  }

  private clearLockRetry(): void {
    if (this.lockRetry !== null) clearTimeout(this.lockRetry);
    this.lockRetry = null;
  }

  private commitQueued(blocking: boolean): void {
    this.scheduled = false;
    if (this.closed && !blocking) return;
    while (this.queue.length > 0) {
      const batch = this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch);
      this.queue = batch === this.queue ? [] : this.queue.slice(this.maxBatch);
      const deferSync = !blocking && this.wal !== null;
      let outcomes: Outcome[];
      try {
        outcomes = this.runBatch(batch, deferSync);
      } catch (error) {
        if (!blocking && isBusy(error)) {
          // Nothing of this batch is written: it goes back to the front, in order, and waits.
          this.queue = batch.concat(this.queue);
          this.waitForLock();
          return;
        }
        // The commit itself failed: nothing in this batch is written.
        const failure = storageFailure(error) ?? error;
        for (const p of batch) p.reject(failure);
        if (failure instanceof StoreUnavailable && isIoError(error)) {
          this.breakDown(failure);
          return;
        }
        if (failure instanceof StoreUnavailable) this.onFailure(failure);
        continue;
      }
      this.lockAttempts = 0;
      this.batches++;
      for (let i = 0; i < batch.length; i++) if (outcomes[i]!.ok) batch[i]!.committed?.();
      const durable: number[] = [];
      for (let i = 0; i < batch.length; i++) {
        const p = batch[i]!;
        const o = outcomes[i]!;
        if (p.wait === "durable" && o.ok) durable.push(i);
        else if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      }
      this.writes += durable.length;
      this.background += batch.length - durable.length;
      // Nobody waits for durability in this batch: the next durable batch's fsync covers it.
      if (durable.length === 0) continue;
      const settle = () => {
        for (const i of durable) batch[i]!.resolve((outcomes[i] as { value: unknown }).value);
      };
      if (!deferSync) {
        settle();
        continue;
      }
      this.wal!.durable().then(settle, (error) => {
        // Committed, but perhaps never on disk: not acknowledged, and nothing is written again.
        const failure = error instanceof StoreUnavailable ? error : new StoreUnavailable("io", `fsync of the WAL failed after commit: ${(error as Error)?.message ?? error}`);
        for (const i of durable) batch[i]!.reject(failure);
        this.breakDown(failure);
      });
    }
  }

  /**
   * An fsync or a commit failed with an I/O error: every queued write is refused, and every later
   * one; the WAL descriptor is closed unsynced (never reused); the owner hears it once.
   */
  private breakDown(cause: StoreUnavailable): void {
    if (this.broken) return;
    const failure = cause.final ? cause : new StoreUnavailable(cause.reason, cause.message, true);
    this.broken = failure;
    this.closed = true;
    this.clearLockRetry();
    const dropped = this.queue;
    this.queue = [];
    for (const p of dropped) p.reject(failure);
    this.wal?.close(failure);
    // The owner hears first: a server stops here (one log line), before the ledger logs anything.
    this.onFatal(failure);
    this.onFailure(failure);
  }

  /** After SQLITE_BUSY: fail what waited too long, retry the rest soon. */
  private waitForLock(): void {
    const now = Date.now();
    const expired = this.queue.filter((p) => now - p.queuedAt >= this.lockWaitMs);
    if (expired.length > 0) {
      this.queue = this.queue.filter((p) => now - p.queuedAt < this.lockWaitMs);
      const locked = new StoreUnavailable("locked", `the database stayed locked by another connection for ${this.lockWaitMs} ms`);
      for (const p of expired) p.reject(locked);
      this.onFailure(locked);
    }
    if (this.queue.length === 0) {
      this.lockAttempts = 0;
      return;
    }
    const delay = Math.min(2 ** this.lockAttempts++, MAX_LOCK_RETRY_MS);
    this.lockRetry = setTimeout(() => {
      this.lockRetry = null;
      this.commitQueued(false);
    }, delay);
  }

  private runBatch(batch: Pending<any>[], deferSync: boolean): Outcome[] {
    const { sql } = this;
    // Only this commit skips the in-line sync; durable() syncs it before anyone hears of it.
    if (deferSync) sql.deferSync.run();
    try {
      // A write that breaks a rule is rare: the batch runs without savepoints first, and only when
      // a write throws is it rolled back whole and run again with one savepoint per write, so that
      // write fails alone. Writes only read and write the database, so the second run decides
      // everything afresh from the same state.
      return this.runWrites(batch, false) ?? this.runWrites(batch, true)!;
    } finally {
      if (deferSync) sql.restoreSync.run();
    }
  }

  /**
   * One transaction over the batch. With `isolated`, each write runs in its own savepoint and a
   * write that throws rolls back alone; without, the first write that throws rolls the whole
   * transaction back and null is returned (nothing of the batch is written).
   */
  private runWrites(batch: Pending<any>[], isolated: boolean): Outcome[] | null {
    const outcomes: Outcome[] = new Array(batch.length);
    const { sql, state } = this;
    sql.begin.run();
    try {
      for (let i = 0; i < batch.length; i++) {
        if (isolated) sql.savepoint.run();
        try {
          outcomes[i] = { ok: true, value: batch[i]!.write() };
          // What the writes built in memory: written with each write's savepoint, or once before COMMIT.
          if (isolated || i === batch.length - 1) state?.flush();
          if (isolated) sql.releaseSavepoint.run();
        } catch (error) {
          state?.discard();
          // The disk, not the write, failed: SQLite may have rolled the whole transaction back.
          if (storageFailure(error)) throw error;
          if (!isolated) return this.replay();
          sql.rollbackSavepoint.run();
          sql.releaseSavepoint.run();
          outcomes[i] = { ok: false, error };
        }
      }
      sql.commit.run();
    } catch (error) {
      state?.discard();
      if (this.db.inTransaction) sql.rollback.run();
      throw error;
    }
    return outcomes;
  }

  /** A write (or the flush) of a batch without savepoints threw: nothing of it is written; it runs again with them. */
  private replay(): null {
    if (this.db.inTransaction) this.sql.rollback.run();
    this.replays++;
    return null;
  }
}
