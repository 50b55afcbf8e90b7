/**
 * How each admitted request ended, kept for generation records (GET /v1/generation and the
 * dashboard): HTTP status, whether the body completed or the client left, total and engine time.
 * The ledger's charge entry already holds what was billed; this adds only what it cannot know.
 *
 * Off the request path: record() is an array push. Rows are written once a second, in
 * transactions that do not wait for their own fsync (SQLite: synchronous=NORMAL for that commit,
 * riding on the next charge's WAL fsync; PostgreSQL: synchronous_commit off). A crash can lose the
 * last second of rows; nothing about money is here. Until written, rows are read from memory.
 * Where the rows live is the store's business (OutcomeRecords: store/sqlite/outcomes.ts,
 * store/postgres/outcomes.ts).
 */

export type RequestEnd = "completed" | "cancelled" | "failed" | "sent";

export interface RequestOutcome {
  requestId: string;
  accountId: string;
  /** The API key the request was made with (null when not known: rows from before it was recorded). */
  keyId?: string | null;
  /** The route pattern, e.g. /v1/chat/completions. */
  endpoint: string;
  /** The catalog id the request named ("unknown" or "none" otherwise). */
  model: string;
  httpStatus: number;
  /** How the response body ended: streams complete, are cancelled by the client, or fail. */
  outcome: RequestEnd;
  streamed: boolean;
  durationMs: number;
  engineMs: number;
}

/** Where outcomes are kept. */
export interface OutcomeRecords {
  /**
   * Writes the rows (replacing any with the same request id) in one transaction, without waiting
   * for their fsync unless `durable`. False when the store cannot take them this instant (they are
   * kept for the next tick). Synchronous where the store is in process.
   */
  write(rows: RequestOutcome[], durable: boolean): boolean | Promise<boolean>;
  get(requestId: string): Promise<RequestOutcome | null>;
  /** Deletes the outcomes of requests whose ids sort below `beforeId` (they arrived earlier). */
  sweep(beforeId: string): void | Promise<void>;
}

export interface OutcomeOptions {
  flushMs: number;
  /** Rows kept in memory at most when writes keep failing; the oldest are dropped. */
  maxPending: number;
  /** Rows older than this are deleted (at most one sweep an hour). */
  retentionMs: number;
  /** Rows per write of the timer's flush (default SLICE_ROWS). */
  sliceRows?: number;
}

export const DEFAULT_OUTCOME_OPTIONS: OutcomeOptions = { flushMs: 1000, maxPending: 100_000, retentionMs: 90 * 86_400_000 };

const SWEEP_EVERY_MS = 3_600_000;

/**
 * The timer's flush writes a second's rows this many at a time, one write per turn of the event
 * loop: an in-process store writes on the serving thread (about 1.5 µs a row here), and a busy
 * server's second of rows in one write held every request in flight for 5 to 10 ms.
 */
export const SLICE_ROWS = 512;

export class RequestOutcomes {
  private pending = new Map<string, RequestOutcome>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastSweep = 0;
  private closed = false;
  /** A write to a remote store under way: the next tick does not start another. */
  private writing: Promise<void> | null = null;
  /** Rows of the timer's flush still to write, a slice per turn (0: none under way). */
  private due = 0;

  constructor(
    private readonly records: OutcomeRecords,
    private readonly onError: (message: string) => void = () => {},
    private readonly options: OutcomeOptions = DEFAULT_OUTCOME_OPTIONS,
  ) {}

  /** Notes how a request ended; written within a second. */
  record(o: RequestOutcome): void {
    if (this.closed) return;
    if (this.pending.size >= this.options.maxPending) {
      this.pending.delete(this.pending.keys().next().value as string);
    }
    o.durationMs = Math.round(o.durationMs);
    o.engineMs = Math.round(o.engineMs);
    this.pending.set(o.requestId, o);
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), this.options.flushMs);
      // A server's other work keeps the process alive; these writes alone must not.
      this.timer.unref?.();
    }
  }

  /** The outcome of one request, if it was recorded (and kept). */
  async get(requestId: string): Promise<RequestOutcome | null> {
    return this.pending.get(requestId) ?? (await this.records.get(requestId));
  }

  /**
   * Writes everything pending now, in one write (close() and tests; the timer writes in slices).
   * Synchronous with an in-process store; with a remote one it returns the write's promise, which
   * never rejects.
   */
  flush(durable = false): void | Promise<void> {
    if (this.writing) return this.writing;
    if (this.pending.size === 0) return;
    return this.write([...this.pending.values()], durable);
  }

  /** The timer: the rows pending now are written SLICE_ROWS at a time, one write per turn. */
  private tick(): void {
    if (this.due > 0 || this.writing) return;
    this.due = this.pending.size;
    this.writeSlice();
  }

  private writeSlice(): void {
    const n = Math.min(this.due, this.pending.size, this.options.sliceRows ?? SLICE_ROWS);
    if (this.closed || n <= 0) {
      this.due = 0;
      return;
    }
    const rows: RequestOutcome[] = [];
    for (const o of this.pending.values()) {
      rows.push(o);
      if (rows.length === n) break;
    }
    this.due -= n;
    const next = (ok: boolean) => {
      // A failed slice waits for the next tick with the rest.
      if (!ok) this.due = 0;
      else if (this.due > 0) setImmediate(() => this.writeSlice());
    };
    void this.write(rows, false, next);
  }

  /** Writes `rows`; `after` hears whether they were. */
  private write(rows: RequestOutcome[], durable: boolean, after: (ok: boolean) => void = () => {}): void | Promise<void> {
    const written = (ok: boolean) => {
      if (ok) {
        for (const o of rows) if (this.pending.get(o.requestId) === o) this.pending.delete(o.requestId);
        this.sweep();
      }
      after(ok);
    };
    // Kept in memory and retried at the next tick (bounded by maxPending).
    const failed = (e: unknown) => {
      this.onError(`request outcomes not written: ${(e as Error)?.message ?? e}`);
      after(false);
    };
    try {
      const w = this.records.write(rows, durable);
      if (!(w instanceof Promise)) return written(w);
      this.writing = w.then(written, failed).finally(() => (this.writing = null));
      return this.writing;
    } catch (e) {
      failed(e);
    }
  }

  /** Stops the timer and writes what is left (shutdown, before the store closes). */
  close(): void | Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.closed = true;
    const inFlight = this.writing;
    if (!inFlight) return this.flush(true);
    return inFlight.then(() => this.flush(true));
  }

  private sweep(): void {
    const now = Date.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    const failed = (e: unknown) => this.onError(`old request outcomes not deleted: ${(e as Error)?.message ?? e}`);
    try {
      const swept = this.records.sweep(requestIdBefore(now - this.options.retentionMs));
      if (swept instanceof Promise) swept.catch(failed);
    } catch (e) {
      failed(e);
    }
  }
}

/**
 * Request ids are "req_" + the arrival time in ms as 9 base-36 digits + random characters (see
 * newRequestId in src/http/request-context.ts), so they sort by arrival: every id that arrived
 * before `ms` sorts below this string.
 */
export function requestIdBefore(ms: number): string {
  return `req_${Math.max(0, Math.floor(ms)).toString(36).padStart(9, "0")}`;
}

/** When a request arrived, read back from its id; null for anything not shaped like one. */
export function arrivalOfRequestId(id: string): number | null {
  const m = /^req_([0-9a-z]{9})/.exec(id);
  if (!m) return null;
  const ms = parseInt(m[1]!, 36);
  return Number.isSafeInteger(ms) ? ms : null;
}
