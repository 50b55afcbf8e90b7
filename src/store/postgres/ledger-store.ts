/**
 * The ledger on PostgreSQL, for any number of instances sharing one database (the port and its
 * invariants: src/billing/ledger-store.ts), with the database off the request path:
 *
 *   grant   in memory, from this instance's lease of the account's money (and of its key's
 *           limit), when the lease covers the hold: no round trip. Otherwise one statement,
 *           switchyard_grant (migration 011): a new lease, a hold row of its own (the direct
 *           path), or a refusal after recalling other instances' leases (lease-grants.ts).
 *   post    a leased hold's charge goes to the instance's charge journal (charge-journal.ts):
 *           durable on local disk, then shipped in batches, one statement each
 *           (journal-shipping.ts). A direct hold's charge is posted in the database as before
 *           (batched: write-batcher.ts), durable before it resolves.
 *   void    a leased hold needs no write; a direct hold is voided in the database (batched).
 *   adjust  one round trip; a deduction may dig neither into direct holds nor into leases.
 *
 * Leases unused for LEASE_IDLE_MS go back; all of them go back at a clean stop, after the
 * journal is shipped; a dead instance's come back through the instance-release path.
 *
 * Failures no call's promise carries — heartbeats that cannot reach the database, this instance
 * found released — are reported to onFailure listeners, so the ledger refuses new holds at once
 * (503) instead of letting each request find out.
 */
import type {
  GrantRequest, GrantResult, LedgerEntryRow, LedgerStore, PostRequest, PostResult,
} from "../../billing/ledger-store";
import { HoldBook } from "../../billing/hold-book";
import { StoreUnavailable } from "../../billing/ledger-store";
import { InternalError, invalidField, notFound } from "../../errors";
import { formatUsd, MAX_BALANCE } from "../../billing/money";
import { nowSeconds } from "../../accounts/accounts";
import { int, type PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { WriteBatcher } from "./write-batcher";
import type { CreditLeases } from "./credit-leases";
import type { ChargeJournal, ShipResult } from "./charge-journal";
import { DEFAULT_RECALL_MS, LeaseGrants } from "./lease-grants";
import { chargeFields, evictOverQuota, shipJournaled, type JournaledCharge } from "./journal-shipping";

/** How long a ledger listing waits for this instance's journaled charges to be shipped first. */
const ENTRIES_SHIP_WAIT_MS = 2_000;
/** How long a clean stop waits for the journal to ship before it keeps its leases instead. */
const SHUTDOWN_DRAIN_MS = 10_000;
/** How long start-up waits for the previous run's journal to ship before it refuses to start. */
const STARTUP_DRAIN_MS = 10_000;

export interface PostgresLedgerOptions {
  /** Most posts (or voids) per statement. */
  maxBatch?: number;
  /**
   * Batches of each kind running at once. One (the default): a post batch holds its accounts'
   * rows until its commit is on disk, so a second batch would mostly wait on the same rows, and
   * smaller batches cost more commits (test/bench/pg-ledger.bench.ts: 1 in flight was 10-50%
   * faster than 2 or 4, one account or sixteen).
   */
  maxInFlight?: number;
  /** How long a post or void is retried while the database cannot take it (a restart, say). */
  retryMs?: number;
  /** The instance's charge journal (absent for a CLI command, which charges nothing). */
  journal?: (ship: (items: JournaledCharge[]) => Promise<ShipResult[]>, shipped: (item: JournaledCharge, r: ShipResult) => void) => ChargeJournal;
  /** How long a grant waits for a recall (ms). */
  recallMs?: number;
}

interface PostRow {
  request_id: string;
  outcome: "posted" | "repeat" | "over_hold" | "no_hold";
  charged: string | null;
  balance_after: string | null;
}

export class PostgresLedgerStore implements LedgerStore {
  private readonly posts: WriteBatcher<PostRequest, PostResult>;
  private readonly voids: WriteBatcher<string, boolean>;
  private readonly failureListeners: ((e: StoreUnavailable) => void)[] = [];
  private readonly grants: LeaseGrants;
  readonly journal: ChargeJournal | null;

  constructor(private readonly db: PgDatabase, private readonly instance: InstanceIdentity, opts: PostgresLedgerOptions = {}) {
    const batch = { maxBatch: opts.maxBatch ?? 256, maxInFlight: opts.maxInFlight ?? 1, retryMs: opts.retryMs ?? 10_000 };
    this.posts = new WriteBatcher((items, maybeApplied) => this.postBatch(items, maybeApplied), batch);
    this.voids = new WriteBatcher((ids) => this.voidBatch(ids), batch);
    // Holds come from leases only with a journal to post their charges to.
    this.grants = new LeaseGrants(db, instance, {
      leasing: Boolean(opts.journal),
      recallMs: opts.recallMs ?? DEFAULT_RECALL_MS,
      undoUnknownHold: (requestId) => this.undoUnknownHold(requestId),
    });
    this.journal = opts.journal ? opts.journal((items) => shipJournaled(this.db, items), (item) => {
      // A previous run's charge (shipped after a restart) came out of that run's leases, not this one's.
      if (item.instanceId === this.instance.id) this.leases.shipped(item.accountId, item.keyId, item.amount);
    }) : null;
  }

  /** This instance's leases in memory (the mirror of what the database set aside for it). */
  get leases(): CreditLeases {
    return this.grants.leases;
  }

  /** Starts giving idle leases back (a serving instance). */
  startLeases(): void {
    this.grants.startIdleReturns();
  }

  grant(g: GrantRequest, book: HoldBook = new HoldBook()): GrantResult | Promise<GrantResult> {
    if (!Number.isSafeInteger(g.amount) || g.amount < 0) return Promise.reject(new RangeError(`bad hold amount ${g.amount}`));
    return this.grants.grant(g, book);
  }

  /** Another instance could not fit a hold: give back what this one leases of it and does not use. */
  recalled(subject: string): Promise<void> {
    return this.grants.recalled(subject);
  }

  /** This instance was released and registered again: its leases went back to their accounts. */
  released(): void {
    this.leases.forgetLeases();
  }

  /** A key's controls changed somewhere: whether it has a limit is asked again. */
  keysChanged(): void {
    this.leases.forgetKeys();
  }

  /** Voids a hold whose reserve may have committed unseen: now (retried), and after the statement timeout. */
  undoUnknownHold(requestId: string): void {
    const undo = () => {
      if (this.db.closed) return;
      this.voids.submit(requestId).catch(() => setTimeout(undo, 1000).unref?.());
    };
    void undo();
    setTimeout(undo, this.db.statementTimeoutMs + 1000).unref?.();
  }

  post(p: PostRequest, committed?: () => void): Promise<PostResult> {
    if (!Number.isSafeInteger(p.amount) || p.amount < 0) return Promise.reject(new RangeError(`bad charge amount ${p.amount}`));
    if (p.amount > p.holdAmount) return Promise.reject(new InternalError(`post of ${p.requestId}: ${p.amount} exceeds its hold of ${p.holdAmount}`));
    if (p.direct) return committed ? this.posts.submit(p).then((r) => (committed(), r)) : this.posts.submit(p);
    if (!this.journal) return Promise.reject(new InternalError(`post of ${p.requestId}: a leased hold without a journal`));
    const charge: JournaledCharge = { ...p, instanceId: this.instance.id };
    // Local disk first (the lease set the money aside); a stored turn waits for the database too.
    return this.journal
      .append(charge, () => {
        this.leases.charged(p.accountId, p.keyId, p.amount);
        committed?.();
      }, p.storedResponse !== undefined)
      .then(() => ({ charged: p.amount, balanceAfter: null, fresh: true }), (e) => {
        throw e instanceof StoreUnavailable ? e : new StoreUnavailable("io", `the charge journal failed: ${(e as Error)?.message ?? e}`);
      });
  }

  private async postBatch(items: PostRequest[], maybeApplied: boolean[]): Promise<(PostResult | Error)[]> {
    const payload = items.map((p) => ({ request_id: p.requestId, amount: p.amount, ...chargeFields(p) }));
    const rows = (await this.db.run((sql) => sql`
      SELECT request_id, outcome, charged, balance_after FROM switchyard_post(${payload}::json, ${nowSeconds()})`)) as PostRow[];
    await evictOverQuota(this.db, items.filter((_, i) => rows[i]?.outcome === "posted"));
    return rows.map((r, i): PostResult | Error => {
      switch (r.outcome) {
        case "posted":
          return { charged: int(r.charged), balanceAfter: int(r.balance_after), fresh: true };
        case "repeat":
          // A repeat of our own first attempt, whose answer was lost with its connection, is the first charge.
          return { charged: int(r.charged), balanceAfter: int(r.balance_after), fresh: maybeApplied[i]! };
        case "over_hold":
          return new InternalError(`post of ${items[i]!.amount} above its hold (${items[i]!.requestId})`);
        default:
          return new InternalError(`post without a pending hold (${items[i]!.requestId})`);
      }
    });
  }

  voidDirect(requestId: string): Promise<boolean> {
    return this.voids.submit(requestId);
  }

  private async voidBatch(ids: string[]): Promise<boolean[]> {
    const rows = (await this.db.run((sql) => sql`
      SELECT request_id FROM switchyard_void(${sql.array(ids, "TEXT")}, ${nowSeconds()})`)) as { request_id: string }[];
    const voided = new Set(rows.map((r) => r.request_id));
    // The same id twice in one batch: only its first occurrence voided it.
    const seen = new Set<string>();
    return ids.map((id) => {
      const first = !seen.has(id);
      seen.add(id);
      return first && voided.has(id);
    });
  }

  async adjust(accountId: string, amount: number, reason: string, _book?: HoldBook): Promise<{ balanceAfter: number }> {
    if (!Number.isSafeInteger(amount) || amount === 0) throw new RangeError(`bad adjustment ${amount}`);
    const [row] = (await this.db.run((sql) => sql`
      SELECT outcome, balance_after FROM switchyard_adjust(${accountId}, ${amount}, ${reason}, ${nowSeconds()}, ${MAX_BALANCE})`)) as {
      outcome: string;
      balance_after: string | null;
    }[];
    switch (row!.outcome) {
      case "ok":
        return { balanceAfter: int(row!.balance_after) };
      case "not_found":
        throw notFound(`No account with id '${accountId}'.`);
      case "below_reserved":
        throw invalidField("amount", "the deduction exceeds the available balance (balance minus reserved)");
      default:
        throw invalidField("amount", `the balance may not exceed ${formatUsd(MAX_BALANCE)} USD`);
    }
  }

  async createAccount(a: { id: string; name: string; createdAt: number }, credits: number, reason: string): Promise<void> {
    if (!Number.isSafeInteger(credits) || credits < 0) throw new RangeError(`bad opening credits ${credits}`);
    const [row] = (await this.db.run((sql) => sql`
      SELECT switchyard_create_account(${a.id}, ${a.name}, ${a.createdAt}, ${credits}, ${reason}, ${MAX_BALANCE}) AS outcome`)) as { outcome: string }[];
    if (row!.outcome !== "ok") {
      throw invalidField("credits", `the balance may not exceed ${formatUsd(MAX_BALANCE)} USD`);
    }
  }

  onFailure(listener: (e: StoreUnavailable) => void): void {
    this.failureListeners.push(listener);
  }

  /** The database could not be reached outside any call (a heartbeat): tell the ledger now. */
  reportFailure(e: StoreUnavailable): void {
    for (const l of this.failureListeners) l(e);
  }

  /**
   * At start-up: what previous runs of this instance left (their requests died with them) is
   * released — holds voided, slots and leases given back — after their journaled charges are
   * shipped, against their own leases. Not shipped within `drainMs`: nothing is released
   * (StoreUnavailable) — its leases stay until its charges are in, or a survivor reaps it. Other
   * instances' holds are never touched here; a dead instance's are released by a survivor once
   * its heartbeat expires (instances.ts).
   */
  async releaseAbandoned(drainMs = STARTUP_DRAIN_MS): Promise<number> {
    if (this.journal && !(await this.journal.drain(drainMs))) {
      throw new StoreUnavailable("unreachable", "the previous run's journaled charges could not be shipped yet");
    }
    const [row] = (await this.db.run((sql) => sql`
      SELECT holds_voided FROM switchyard_release_previous(${this.instance.id}, ${this.instance.name}, ${nowSeconds()})`)) as {
      holds_voided: number;
    }[];
    return row?.holds_voided ?? 0;
  }

  /** Any instance may expire any hold: the void is the same batched, idempotent switchyard_void. */
  async expireHolds(createdBefore: number): Promise<string[]> {
    const rows = (await this.db.run((sql) => sql`
      SELECT request_id FROM holds WHERE state = 'pending' AND created_at < ${createdBefore} LIMIT 1000`)) as { request_id: string }[];
    const voided = await Promise.all(rows.map((r) => this.voids.submit(r.request_id)));
    return rows.filter((_, i) => voided[i]).map((r) => r.request_id);
  }

  async pendingHolds(): Promise<number> {
    const [row] = (await this.db.run((sql) => sql`SELECT count(*)::int AS n FROM holds WHERE state = 'pending'`)) as { n: number }[];
    return row?.n ?? 0;
  }

  async entries(accountId: string, limit: number): Promise<LedgerEntryRow[]> {
    // Read your own charges: what this instance journaled goes first (a batch, milliseconds).
    if (this.journal && this.journal.pending > 0) await this.journal.drain(ENTRIES_SHIP_WAIT_MS);
    const rows = (await this.db.run((sql) => sql`
      SELECT id, account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
             input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved, characters, reason, created_at
        FROM ledger_entries WHERE account_id = ${accountId} ORDER BY id DESC LIMIT ${limit}`)) as Record<string, unknown>[];
    return rows.map((r) => ({
      id: int(r.id),
      account_id: r.account_id as string,
      kind: r.kind as LedgerEntryRow["kind"],
      amount: int(r.amount),
      balance_after: int(r.balance_after),
      request_id: (r.request_id as string | null) ?? null,
      endpoint: (r.endpoint as string | null) ?? null,
      model: (r.model as string | null) ?? null,
      service_tier: (r.service_tier as string | null) ?? null,
      input_tokens: int(r.input_tokens),
      output_tokens: int(r.output_tokens),
      cached_tokens: int(r.cached_tokens),
      cache_write_tokens: int(r.cache_write_tokens),
      cache_saved: int(r.cache_saved),
      characters: int(r.characters),
      reason: (r.reason as string | null) ?? null,
      created_at: int(r.created_at),
    }));
  }

  /**
   * Shutdown: queued posts and voids are written, the journal ships what it holds, and every
   * lease goes back (what requests still hold stays: those end with the instance's release).
   * False when the journal could not ship everything within `drainMs` (the database down or too
   * slow): then nothing goes back — the leases still cover the journaled charges, which the next
   * start on this data directory ships first (docs/scale-out.md, "When something fails").
   */
  async flush(drainMs = SHUTDOWN_DRAIN_MS): Promise<boolean> {
    this.grants.stopIdleReturns();
    await Promise.all([this.posts.drained(), this.voids.drained()]);
    if (this.journal && !(await this.journal.drain(drainMs))) return false;
    await this.grants.returnAll();
    return true;
  }

  /** Closes the charge journal's own database (after flush). */
  closeJournal(): void {
    this.journal?.close();
  }

  /** Statements and items per kind of batch, for metrics and the benchmark. */
  get batchStats() {
    return {
      postBatches: this.posts.batches, posts: this.posts.items,
      voidBatches: this.voids.batches, voids: this.voids.items,
    };
  }
}
