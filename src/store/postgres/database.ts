/**
 * The PostgreSQL connection pool every PostgreSQL store shares, on Bun's built-in driver
 * (Bun.sql: measured against the `postgres` package in test/bench/pg-driver.bench.ts — faster on
 * every row, pipelines on one connection, and fails fast instead of hanging when the database
 * goes away).
 *
 * Failures are sorted here, once:
 *   - the database cannot take the write now (unreachable, restarting, disk full, lock wait or
 *     statement timeout): StoreUnavailable, which the ledger turns into 503 before any upstream;
 *   - of those, the ones where a statement may or may not have been applied (the connection
 *     dropped after it was sent): `outcomeUnknown`, so writers can retry idempotent statements
 *     or undo non-idempotent ones once the database is back;
 *   - anything else (a constraint, a bug) is left as it is.
 * Error texts from the driver never leave this module inside StoreUnavailable: only a reason
 * and the SQLSTATE / driver code, so no SQL, host or password reaches a log line or a client.
 *
 * A database that goes silent (a frozen server or a dead network path: the connections stay
 * open, nothing answers, and a server-side statement_timeout cannot fire) is found by a
 * watchdog: once a statement has waited `stallMs` and nothing else answered meanwhile, a
 * `SELECT 1` on a connection of its own gets `stallMs` more. Unanswered, the database is marked
 * down: every statement in flight fails at once as OutcomeUnknown (it may still run later), and
 * every new one fails before it is sent (503 store_unavailable, no waiting), until a probe —
 * one each `stallMs / 2` — is answered again. See docs/scale-out.md.
 */
import { SQL } from "bun";
import { StoreUnavailable } from "../../billing/ledger-store";
import { serviceUnavailable } from "../../errors";

export interface PgDatabaseOptions {
  url: string;
  /** Most connections this process opens (SWITCHYARD_DATABASE_POOL). */
  pool: number;
  /** Server-side limit per statement; also bounds how long a write's outcome can stay unknown. */
  statementTimeoutMs?: number;
  /** Server-side limit on waiting for a row lock (a hot account) before giving up with 503. */
  lockTimeoutMs?: number;
  /** Seconds to wait for a connection to open. */
  connectTimeoutSeconds?: number;
  applicationName?: string;
  /** How long a database that answers nothing may stay silent before it is treated as down. */
  stallMs?: number;
  /** Told when the database is found silent (true) and when it answers again (false). */
  onDown?: (down: boolean) => void;
}

export const DEFAULT_STALL_MS = 2_000;

/** A statement waiting for its answer, for the watchdog. */
interface InFlight {
  startedAt: number;
  fail: (e: unknown) => void;
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
export const DEFAULT_LOCK_TIMEOUT_MS = 10_000;

export class PgDatabase {
  readonly sql: SQL;
  readonly statementTimeoutMs: number;
  /**
   * How long a write that precedes the upstream (a hold, an admission) may go unanswered before
   * the request is refused with 503: the server's lock wait, plus a margin.
   */
  readonly answerTimeoutMs: number;
  /** Statements sent, for the benchmark's round trips per request. */
  statements = 0;
  /** Liveness probes sent (after a stall, and while down). */
  probes = 0;
  /** Closed (or abandoned): background retries stop. */
  closed = false;
  /** The database stopped answering (see the module comment); statements fail before they are sent. */
  down = false;
  readonly stallMs: number;
  private readonly inFlight = new Set<InFlight>();
  private lastAnswerAt = Date.now();
  private watchdog: ReturnType<typeof setTimeout> | null = null;
  private probing = false;
  /** A connection of its own, so a probe never queues behind the pool's stuck statements. */
  private probeSql: SQL | null = null;
  private readonly url: string;
  private readonly connectTimeoutSeconds: number;
  private readonly onDown: (down: boolean) => void;

  constructor(opts: PgDatabaseOptions) {
    this.statementTimeoutMs = opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
    const lockTimeoutMs = opts.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
    this.answerTimeoutMs = lockTimeoutMs + 5_000;
    this.stallMs = opts.stallMs ?? DEFAULT_STALL_MS;
    this.url = opts.url;
    this.connectTimeoutSeconds = opts.connectTimeoutSeconds ?? 5;
    this.onDown = opts.onDown ?? (() => {});
    this.sql = new SQL({
      url: opts.url,
      max: opts.pool,
      connectionTimeout: this.connectTimeoutSeconds,
      idleTimeout: 60,
      connection: {
        application_name: opts.applicationName ?? "switchyard",
        statement_timeout: this.statementTimeoutMs,
        lock_timeout: lockTimeoutMs,
        idle_in_transaction_session_timeout: 60_000,
      },
    });
  }

  /**
   * Runs one statement (counted), turning a database that cannot answer into StoreUnavailable.
   * With `timeoutMs`, a statement still unanswered then (a database that went silent, not one
   * that refused) rejects with OutcomeUnknown: it may still run, so writers undo or retry it.
   */
  async run<T>(statement: (sql: SQL) => Promise<T>, timeoutMs?: number): Promise<T> {
    // Known down: refused before it is sent, so it certainly did not run.
    if (this.down) throw new StoreUnavailable("unreachable", "postgres not answering");
    this.statements++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const entry: InFlight = { startedAt: Date.now(), fail: () => {} };
    try {
      const running = statement(this.sql);
      running.then(this.answered, (e) => {
        // A refused connection is no answer from the server.
        if (sqlState(e) !== undefined) this.answered();
      });
      const waits: Promise<T>[] = [running];
      waits.push(new Promise<never>((_, reject) => {
        entry.fail = reject;
        this.inFlight.add(entry);
        this.watch();
      }));
      if (timeoutMs !== undefined) {
        waits.push(new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new OutcomeUnknown("unreachable", `postgres no answer within ${timeoutMs} ms`)), timeoutMs);
        }));
      }
      return await Promise.race(waits);
    } catch (e) {
      throw toStoreError(e);
    } finally {
      this.inFlight.delete(entry);
      clearTimeout(timer);
    }
  }

  private readonly answered = () => {
    this.lastAnswerAt = Date.now();
  };

  /** Arms the watchdog while statements wait for answers. */
  private watch(): void {
    if (this.watchdog || this.down || this.closed || this.inFlight.size === 0) return;
    let oldest = Infinity;
    for (const f of this.inFlight) oldest = Math.min(oldest, f.startedAt);
    const due = Math.max(oldest, this.lastAnswerAt) + this.stallMs - Date.now();
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      void this.check();
    }, Math.max(due, 10));
    this.watchdog.unref?.();
  }

  /** A statement waited stallMs with no answer from anywhere: probe, and mark down if silent. */
  private async check(): Promise<void> {
    const now = Date.now();
    let oldest = Infinity;
    for (const f of this.inFlight) oldest = Math.min(oldest, f.startedAt);
    if (this.down || this.closed || now - oldest < this.stallMs || now - this.lastAnswerAt < this.stallMs) {
      this.watch();
      return;
    }
    if (await this.probe()) this.watch();
    else this.markDown();
  }

  /** SELECT 1 on the probe connection: true when answered within stallMs. */
  private async probe(): Promise<boolean> {
    if (this.probing) return false;
    this.probing = true;
    this.probes++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      this.probeSql ??= new SQL({ url: this.url, max: 1, connectionTimeout: this.connectTimeoutSeconds, idleTimeout: 60 });
      const asked = this.probeSql`SELECT 1`;
      asked.catch(() => {});
      const silent = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), this.stallMs);
      });
      const answered = await Promise.race([asked.then(() => true as const), silent]);
      if (answered) this.answered();
      return answered;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }

  private markDown(): void {
    if (this.down || this.closed) return;
    this.down = true;
    this.onDown(true);
    const lost = new OutcomeUnknown("unreachable", "postgres stopped answering");
    for (const f of this.inFlight) f.fail(lost);
    this.inFlight.clear();
    void this.recover();
  }

  /** While down: a probe each stallMs / 2 until one is answered. */
  private async recover(): Promise<void> {
    while (this.down && !this.closed) {
      if (await this.probe()) {
        this.down = false;
        this.onDown(false);
        this.watch();
        return;
      }
      await Bun.sleep(Math.max(50, this.stallMs / 2));
    }
  }

  /**
   * Runs one statement of a record store (accounts, keys, responses, usage): as run(), but a
   * database that cannot answer is the domain's 503 service_unavailable, never its own text.
   */
  async ask<T>(statement: (sql: SQL) => Promise<T>): Promise<T> {
    try {
      return await this.run(statement);
    } catch (e) {
      if (e instanceof StoreUnavailable) throw serviceUnavailable();
      throw e;
    }
  }

  async close(): Promise<void> {
    this.stopWatching();
    await this.probeSql?.close({ timeout: 0 }).catch(() => {});
    await this.sql.close({ timeout: 1 });
  }

  private stopWatching(): void {
    this.closed = true;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  /** Drops every connection at once, statements in flight included (a process dying, in tests). */
  async abandon(): Promise<void> {
    this.stopWatching();
    await this.probeSql?.close({ timeout: 0 }).catch(() => {});
    await this.sql.close({ timeout: 0 });
  }
}

/** The SQLSTATE of a server error, or undefined. */
export function sqlState(e: unknown): string | undefined {
  const errno = (e as { errno?: unknown } | null)?.errno;
  return typeof errno === "string" ? errno : undefined;
}

function driverCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** Driver codes for a connection that never carried the statement: it certainly did not run. */
const NOT_SENT = new Set([
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_TLS_NOT_AVAILABLE",
  "ERR_POSTGRES_TLS_UPGRADE_FAILED",
]);

/** Driver codes for a connection lost while the statement may have been running. */
const LOST = new Set(["ERR_POSTGRES_CONNECTION_CLOSED", "ERR_POSTGRES_IDLE_TIMEOUT", "ERR_POSTGRES_LIFETIME_TIMEOUT", "ERR_POSTGRES_QUERY_CANCELLED"]);

/**
 * A StoreUnavailable whose statement may have been applied: the connection dropped or the server
 * shut down after it was sent. Writers retry idempotent statements, and undo the others.
 */
export class OutcomeUnknown extends StoreUnavailable {}

/** Maps a driver or server error to StoreUnavailable when the database cannot take work now. */
export function toStoreError(e: unknown): unknown {
  if (e instanceof StoreUnavailable) return e;
  const code = driverCode(e);
  const state = sqlState(e);
  const what = `postgres ${state ?? code ?? "error"}`;
  if (code && NOT_SENT.has(code)) return new StoreUnavailable("unreachable", what);
  if (code?.startsWith("ERR_POSTGRES_AUTHENTICATION") || code?.startsWith("ERR_POSTGRES_SASL")) return new StoreUnavailable("unreachable", what);
  if (code && LOST.has(code)) return new OutcomeUnknown("unreachable", what);
  if (state) {
    // Connection exceptions, and the server going down (admin or crash shutdown) mid-statement.
    if (state.startsWith("08") || state === "57P01" || state === "57P02") return new OutcomeUnknown("unreachable", what);
    // Starting up, too many connections, a read-only server (a replica promoted elsewhere).
    if (state === "57P03" || state === "53300" || state === "25006") return new StoreUnavailable("unreachable", what);
    if (state === "53100") return new StoreUnavailable("full", what);
    // A lock wait or the statement ran past its limit: nothing was applied.
    if (state === "55P03" || state === "57014") return new StoreUnavailable("locked", what);
    // Deadlock or serialization failure: rolled back, safe to retry.
    if (state === "40P01" || state === "40001") return new StoreUnavailable("locked", what);
    if (state.startsWith("53") || state.startsWith("58") || state === "XX000" || state === "XX001" || state === "XX002") return new StoreUnavailable("io", what);
  }
  return e;
}

/** True when a write failed in a way that may still have applied it. */
export function outcomeUnknown(e: unknown): boolean {
  return e instanceof OutcomeUnknown;
}

/** Integer columns (BIGINT arrives as a decimal string) as numbers; money stays exact below 2^53. */
export function int(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "string") return Number(v);
  if (typeof v === "bigint") return Number(v);
  return 0;
}
