/**
 * How each admitted request ended, kept for generation records (GET /v1/generation and the
 * dashboard): HTTP status, whether the body completed or the client left, total and engine time.
 * The ledger's charge entry already holds what was billed; this adds only what it cannot know.
 *
 * Off the request path: record() is an array push. Rows are written once a second in one
 * transaction committed without its own fsync (synchronous=NORMAL for that commit only, like the
 * group commit's deferred sync), so they ride on the next charge's WAL fsync. A crash can lose the
 * last second of rows; nothing about money is here. Until written, rows are read from memory.
 */
import type { Store } from "../store/database";

export type RequestEnd = "completed" | "cancelled" | "failed" | "sent";

export interface RequestOutcome {
  requestId: string;
  accountId: string;
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

interface OutcomeRow {
  request_id: string;
  account_id: string;
  endpoint: string;
  model: string;
  http_status: number;
  outcome: string;
  streamed: number;
  duration_ms: number;
  engine_ms: number;
}

export interface OutcomeOptions {
  flushMs: number;
  /** Rows kept in memory at most when writes keep failing; the oldest are dropped. */
  maxPending: number;
  /** Rows older than this are deleted (at most one sweep an hour). */
  retentionMs: number;
}

export const DEFAULT_OUTCOME_OPTIONS: OutcomeOptions = { flushMs: 1000, maxPending: 100_000, retentionMs: 90 * 86_400_000 };

const SWEEP_EVERY_MS = 3_600_000;

export class RequestOutcomes {
  private pending = new Map<string, RequestOutcome>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastSweep = 0;
  private closed = false;
  private readonly q;
  private readonly writeAll: (rows: RequestOutcome[]) => void;

  constructor(
    private readonly db: Store,
    private readonly onError: (message: string) => void = () => {},
    private readonly options: OutcomeOptions = DEFAULT_OUTCOME_OPTIONS,
  ) {
    const insert = db.query(
      `INSERT OR REPLACE INTO request_outcomes (request_id, account_id, endpoint, model, http_status, outcome, streamed, duration_ms, engine_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.q = {
      byId: db.query<OutcomeRow, [string]>("SELECT * FROM request_outcomes WHERE request_id = ?"),
      // Request ids sort by arrival time (see requestIdBefore), so this is a range on the key.
      sweep: db.query("DELETE FROM request_outcomes WHERE request_id < ?"),
      synchronous: db.query<{ synchronous: number }, []>("PRAGMA synchronous"),
    };
    // Built once: bun:sqlite's db.transaction() makes a new wrapper per call.
    this.writeAll = db.transaction((rows: RequestOutcome[]) => {
      for (const o of rows) {
        insert.run(o.requestId, o.accountId, o.endpoint, o.model, o.httpStatus, o.outcome, o.streamed ? 1 : 0, o.durationMs, o.engineMs);
      }
    });
  }

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
      this.timer = setInterval(() => this.flush(), this.options.flushMs);
      // A server's other work keeps the process alive; these writes alone must not.
      this.timer.unref?.();
    }
  }

  /** The outcome of one request, if it was recorded (and kept). */
  get(requestId: string): RequestOutcome | null {
    const mem = this.pending.get(requestId);
    if (mem) return mem;
    const row = this.q.byId.get(requestId);
    return row ? fromRow(row) : null;
  }

  /** Writes what is pending now (the timer calls this; so does close()). */
  flush(fsync = false): void {
    if (this.pending.size === 0 || this.db.inTransaction) return;
    const rows = [...this.pending.values()];
    const level = this.q.synchronous.get()!.synchronous;
    try {
      // No fsync of its own: the next durable ledger commit syncs the whole WAL, these rows too.
      if (!fsync && level >= 2) this.db.run("PRAGMA synchronous = NORMAL");
      try {
        this.writeAll(rows);
      } finally {
        if (!fsync && level >= 2) this.db.run(`PRAGMA synchronous = ${level}`);
      }
      for (const o of rows) if (this.pending.get(o.requestId) === o) this.pending.delete(o.requestId);
      this.sweep();
    } catch (e) {
      // Kept in memory and retried at the next tick (bounded by maxPending).
      this.onError(`request outcomes not written: ${(e as Error).message}`);
    }
  }

  /** Stops the timer and writes what is left (shutdown, before the database closes). */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.flush(true);
    this.closed = true;
  }

  private sweep(): void {
    const now = Date.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    this.q.sweep.run(requestIdBefore(now - this.options.retentionMs));
  }
}

function fromRow(r: OutcomeRow): RequestOutcome {
  return {
    requestId: r.request_id, accountId: r.account_id, endpoint: r.endpoint, model: r.model, httpStatus: r.http_status,
    outcome: r.outcome as RequestEnd, streamed: r.streamed === 1, durationMs: r.duration_ms, engineMs: r.engine_ms,
  };
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
