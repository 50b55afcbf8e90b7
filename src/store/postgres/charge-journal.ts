/**
 * The charge journal: PostgreSQL off the request path. A charge taken from this instance's lease
 * is made durable on the instance's own disk first — one row in `charges.db` (SQLite, in
 * SWITCHYARD_DATA_DIR), group-committed and fsynced like the single-instance ledger — and the
 * request completes then; the journal ships its rows to PostgreSQL in batches, one statement per
 * batch (switchyard_post_leased), every SWITCHYARD_CHARGE_SHIP_MS or as soon as a batch is full,
 * and deletes what the database took. The lease already set that money aside in the database, so
 * no other instance can spend it meanwhile.
 *
 * What a crash costs (docs/money.md): a process crash loses nothing — the next run of the instance
 * (same data directory) ships what its journal holds before it releases its previous run's
 * leases. A machine lost with its disk loses the charges of its last moments that were not
 * shipped (at most one ship interval, plus any the database could not take then): those requests
 * go unbilled, never billed twice, and no balance goes below zero.
 *
 * A charge whose ship is waited for (a stored Responses turn must be readable from any instance
 * once its client saw it) resolves only once the database took it.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { mkdirSync } from "node:fs";
import { GroupCommit } from "../sqlite/group-commit";
import type { FsyncFn } from "../sqlite/wal-sync";
import type { PostRequest } from "../../billing/ledger-store";

/** What the database answered for one shipped charge. */
export type ShipOutcome = "posted" | "repeat" | "reduced" | "no_account";

export interface ShipResult {
  requestId: string;
  outcome: ShipOutcome;
  charged: number;
}

export interface JournalOptions {
  /** Ship at least this often (ms) while rows wait. */
  shipMs?: number;
  /** Most charges per statement. */
  maxBatch?: number;
  /** Tests inject a failing fsync here. */
  fsync?: FsyncFn;
  /** Ships a batch to the database; rejects when it cannot (the batch is retried, with backoff). */
  ship(items: PostRequest[]): Promise<ShipResult[]>;
  /** Told of every charge the database took (the lease's mirror follows it). */
  shipped(item: PostRequest, result: ShipResult): void;
  onError?(e: unknown): void;
}

const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2_000;

export class ChargeJournal {
  private readonly db: Database;
  private readonly commits: GroupCommit;
  private readonly q;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private shipping: Promise<void> | null = null;
  private retryDelay = RETRY_MIN_MS;
  private closed = false;
  /** Charges waiting for their ship, by request id (stored Responses turns). */
  private readonly waiting = new Map<string, { resolve: () => void; reject: (e: unknown) => void }>();
  private readonly shipMs: number;
  private readonly maxBatch: number;
  /** Charges shipped whose rows are not removed yet: their `shipped` has run. */
  private readonly applied = new Set<string>();
  /** Rows written and not yet shipped (a gauge; the table is the truth). */
  private unshipped = 0;
  /** Statements sent to ship charges (for the benchmark's transactions per request). */
  batches = 0;

  constructor(dataDir: string, private readonly opts: JournalOptions) {
    mkdirSync(dataDir, { recursive: true });
    this.db = new Database(join(dataDir, "charges.db"), { create: true, strict: true });
    this.db.run("PRAGMA busy_timeout = 0");
    this.db.run("PRAGMA journal_mode = WAL");
    this.db.run("PRAGMA synchronous = FULL");
    this.db.run("CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE, body TEXT NOT NULL)");
    this.commits = new GroupCommit(this.db, { fsync: opts.fsync });
    this.shipMs = opts.shipMs ?? 20;
    this.maxBatch = opts.maxBatch ?? 500;
    this.q = {
      insert: this.db.query<never, [string, string]>("INSERT INTO outbox (request_id, body) VALUES (?, ?) ON CONFLICT (request_id) DO NOTHING"),
      batch: this.db.query<{ seq: number; body: string }, [number]>("SELECT seq, body FROM outbox ORDER BY seq LIMIT ?"),
      count: this.db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM outbox"),
      ids: this.db.query<{ request_id: string }, []>("SELECT request_id FROM outbox"),
      remove: this.db.query<never, [number]>("DELETE FROM outbox WHERE seq <= ?"),
    };
    this.unshipped = this.q.count.get()!.n;
  }

  /**
   * Writes the charge durably; `committed` runs at its commit. Resolves once on disk — or, with
   * `untilShipped`, once the database took it. Idempotent per request id.
   */
  async append(p: PostRequest, committed?: () => void, untilShipped = false): Promise<void> {
    const body = JSON.stringify(p);
    await this.commits.submit(() => {
      const fresh = this.q.insert.run(p.requestId, body).changes > 0;
      if (fresh) this.unshipped++;
    }, "durable", committed);
    if (!untilShipped) {
      this.schedule(this.shipMs);
      return;
    }
    const shipped = new Promise<void>((resolve, reject) => this.waiting.set(p.requestId, { resolve, reject }));
    this.schedule(0);
    return shipped;
  }

  /** Rows written and not yet taken by the database. */
  get pending(): number {
    return this.unshipped;
  }

  /** The request ids of the charges waiting to be shipped (diagnostics and the ledger checker). */
  pendingIds(): string[] {
    return this.q.ids.all().map((r) => r.request_id);
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.shipping) return;
    if (this.timer && delayMs > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.shipOnce();
    }, delayMs);
    this.timer.unref?.();
  }

  /** Ships the oldest batch; reschedules while rows remain. */
  private shipOnce(): Promise<void> {
    if (this.shipping) return this.shipping;
    this.shipping = (async () => {
      const rows = this.q.batch.all(this.maxBatch);
      if (rows.length === 0) return;
      const items = rows.map((r) => JSON.parse(r.body) as PostRequest);
      let results: ShipResult[];
      try {
        this.batches++;
        results = await this.opts.ship(items);
      } catch (e) {
        this.opts.onError?.(e);
        this.retryDelay = Math.min(this.retryDelay * 2, RETRY_MAX_MS);
        return;
      }
      this.retryDelay = RETRY_MIN_MS;
      const byId = new Map(results.map((r) => [r.requestId, r]));
      for (const item of items) {
        const r = byId.get(item.requestId);
        // Once per charge: a batch whose removal failed comes back as repeats (a repeat after a
        // lost answer is the first this run hears of it, and counts).
        if (r && !this.applied.has(item.requestId)) {
          this.applied.add(item.requestId);
          this.opts.shipped(item, r);
        }
      }
      // Gone from the journal only once the database has them: a crash before this line ships them
      // again (a repeat, which the database answers as one), and so does a journal closed meanwhile.
      if (this.closed) return;
      try {
        await this.commits.submit(() => this.q.remove.run(rows[rows.length - 1]!.seq), "commit");
      } catch (e) {
        this.opts.onError?.(e);
        return;
      }
      for (const item of items) this.applied.delete(item.requestId);
      this.unshipped = Math.max(0, this.unshipped - rows.length);
      for (const item of items) {
        const w = this.waiting.get(item.requestId);
        if (w) {
          this.waiting.delete(item.requestId);
          w.resolve();
        }
      }
    })().finally(() => {
      this.shipping = null;
      if (this.unshipped > 0) this.schedule(this.retryDelay > RETRY_MIN_MS ? this.retryDelay : this.unshipped >= this.maxBatch ? 0 : this.shipMs);
    });
    return this.shipping;
  }

  /** Ships everything now (start-up and shutdown); false when rows are still left after `timeoutMs`. */
  async drain(timeoutMs = 10_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.q.count.get()!.n > 0) {
      if (Date.now() > until) return false;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      await this.shipOnce();
      if (this.q.count.get()!.n > 0) await Bun.sleep(this.retryDelay);
    }
    return true;
  }

  /** Writes what is queued, and closes (shutdown: drain first). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.waiting.values()) w.reject(new Error("the charge journal closed before this charge was shipped"));
    this.waiting.clear();
    this.commits.close();
    this.db.close();
  }

  /** A crash, for tests: nothing queued is written, nothing flushed. */
  abandon(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.commits.abandon();
    this.db.close();
  }
}
