/**
 * The ledger on PostgreSQL, for any number of instances sharing one database (the port and its
 * invariants: src/billing/ledger-store.ts). The writes are functions in the database
 * (migrations 003 and 004), so:
 *
 *   reserve  one round trip, atomic: a conditional UPDATE raises `reserved` only while
 *            balance − reserved covers the hold, and the hold row (owned by this instance) is
 *            written in the same statement. Concurrent requests on any instances can never
 *            overspend: they queue on the account's row.
 *   post     batched (write-batcher.ts): every post submitted while a batch is running goes out
 *            in the next one — one statement, one transaction, one fsync for the lot. Resolves
 *            once committed with synchronous_commit on (durable). Idempotent per request id; a
 *            stored Responses turn is inserted in the same transaction as its charge.
 *   void     batched the same way; idempotent.
 *   adjust   one round trip; the rules (not below what is reserved, not above the maximum) are
 *            checked on the locked row.
 *   createAccount  one round trip, one transaction: the account and its opening credit entry.
 *
 * Failures no call's promise carries — heartbeats that cannot reach the database, this instance
 * found released — are reported to onFailure listeners, so the ledger refuses new holds at once
 * (503) instead of letting each request find out.
 *
 * A reserve whose outcome is unknown (the connection dropped after it was sent) may have left a
 * hold that no request owns while this instance lives; it is voided as soon as the database
 * answers, and once more after the statement timeout (by which time the server has either
 * committed it or given up on it).
 */
import type {
  HoldRequest, LedgerEntryRow, LedgerStore, PostRequest, PostResult, ReserveResult,
} from "../../billing/ledger-store";
import { StoreUnavailable } from "../../billing/ledger-store";
import { InternalError, invalidField, notFound } from "../../errors";
import { formatUsd, MAX_BALANCE } from "../../billing/money";
import { nowSeconds } from "../../accounts/accounts";
import { int, outcomeUnknown, toStoreError, type PgDatabase } from "./database";
import type { InstanceIdentity } from "./instances";
import { WriteBatcher } from "./write-batcher";

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

  constructor(private readonly db: PgDatabase, private readonly instance: InstanceIdentity, opts: PostgresLedgerOptions = {}) {
    const batch = { maxBatch: opts.maxBatch ?? 256, maxInFlight: opts.maxInFlight ?? 1, retryMs: opts.retryMs ?? 10_000 };
    this.posts = new WriteBatcher((items, maybeApplied) => this.postBatch(items, maybeApplied), batch);
    this.voids = new WriteBatcher((ids) => this.voidBatch(ids), batch);
  }

  async reserve(h: HoldRequest): Promise<ReserveResult> {
    if (!Number.isSafeInteger(h.amount) || h.amount < 0) throw new RangeError(`bad hold amount ${h.amount}`);
    try {
      if (h.key) return await this.reserveWithKey(h, h.key);
      const [row] = (await this.db.run((sql) => sql`
        SELECT ok, available FROM switchyard_reserve(
          ${h.requestId}, ${h.accountId}, ${h.amount}, ${h.endpoint}, ${h.model}, ${this.instance.id}, ${h.createdAt ?? nowSeconds()})`, this.db.answerTimeoutMs)) as {
        ok: boolean;
        available: string | null;
      }[];
      return row!.ok ? { ok: true } : { ok: false, available: int(row!.available) };
    } catch (e) {
      if (outcomeUnknown(e)) this.undoUnknownHold(h.requestId);
      throw instanceError(e, this.instance);
    }
  }

  /** A hold that must fit the key's spend limit too: migration 006's switchyard_reserve_key, one round trip. */
  private async reserveWithKey(h: HoldRequest, key: NonNullable<HoldRequest["key"]>): Promise<ReserveResult> {
    const p = key.periods;
    const [row] = (await this.db.run((sql) => sql`
      SELECT ok, refused, available, key_limit FROM switchyard_reserve_key(
        ${h.requestId}, ${h.accountId}, ${h.amount}, ${h.endpoint}, ${h.model}, ${this.instance.id}, ${h.createdAt ?? nowSeconds()},
        ${key.id}, ${p.day}, ${p.week}, ${p.month})`, this.db.answerTimeoutMs)) as {
      ok: boolean;
      refused: "credits" | "key_limit" | null;
      available: string | null;
      key_limit: string | null;
    }[];
    if (row!.ok) return { ok: true };
    if (row!.refused === "key_limit") return { ok: false, available: int(row!.available), keyLimit: int(row!.key_limit) };
    return { ok: false, available: int(row!.available) };
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

  post(p: PostRequest): Promise<PostResult> {
    if (!Number.isSafeInteger(p.amount) || p.amount < 0) return Promise.reject(new RangeError(`bad charge amount ${p.amount}`));
    return this.posts.submit(p);
  }

  /**
   * After a batch, each stored turn's account is brought within its quota (oldest turns deleted
   * first, never the one just written). Its own statement, after the charge: a failure here leaves
   * the charge and the turn as they are, and the account's next stored turn evicts again.
   */
  private async evictOverQuota(items: PostRequest[], rows: PostRow[]): Promise<void> {
    for (let i = 0; i < items.length; i++) {
      const r = items[i]!.storedResponse;
      if (!r || r.quotaBytes === undefined || rows[i]?.outcome !== "posted") continue;
      await this.db.run((sql) => sql`SELECT switchyard_evict_responses(${r.accountId}, ${r.quotaBytes}, ${r.id})`).catch(() => {});
    }
  }

  private async postBatch(items: PostRequest[], maybeApplied: boolean[]): Promise<(PostResult | Error)[]> {
    const payload = items.map((p) => ({
      request_id: p.requestId,
      amount: p.amount,
      service_tier: p.serviceTier,
      note: p.note ?? null,
      input_tokens: p.inputTokens ?? 0,
      output_tokens: p.outputTokens ?? 0,
      cached_tokens: p.cachedTokens ?? 0,
      cache_write_tokens: p.cacheWriteTokens ?? 0,
      cache_saved: p.cacheSaved ?? 0,
      reasoning_tokens: p.reasoningTokens ?? 0,
      characters: p.characters ?? 0,
      ...(p.storedResponse
        ? {
            resp_id: p.storedResponse.id,
            resp_account_id: p.storedResponse.accountId,
            resp_previous_id: p.storedResponse.previousResponseId,
            resp_input_items: p.storedResponse.inputItems,
            resp_body: p.storedResponse.response,
            resp_created_at: p.storedResponse.createdAt,
          }
        : {}),
    }));
    const rows = (await this.db.run((sql) => sql`
      SELECT request_id, outcome, charged, balance_after FROM switchyard_post(${payload}::json, ${nowSeconds()})`)) as PostRow[];
    await this.evictOverQuota(items, rows);
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

  void(requestId: string): Promise<boolean> {
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

  async adjust(accountId: string, amount: number, reason: string): Promise<{ balanceAfter: number }> {
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
   * At start-up: voids what previous runs of this instance left pending (their requests died
   * with them). Other instances' holds are never touched here; a dead instance's are released by
   * a survivor once its heartbeat expires (instances.ts).
   */
  async releaseAbandoned(): Promise<number> {
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

  /** Waits for queued posts and voids (shutdown). */
  async flush(): Promise<void> {
    await Promise.all([this.posts.drained(), this.voids.drained()]);
  }

  /** Statements and items per kind of batch, for metrics and the benchmark. */
  get batchStats() {
    return {
      postBatches: this.posts.batches, posts: this.posts.items,
      voidBatches: this.voids.batches, voids: this.voids.items,
    };
  }
}

/**
 * This instance was declared dead (SQLSTATE SY001): the store cannot take its writes until it
 * registered again, which the registry does at once.
 */
export function instanceError(e: unknown, instance: InstanceIdentity): unknown {
  const err = toStoreError(e);
  if ((err as { errno?: string } | null)?.errno === "SY001") {
    instance.noticeReleased?.();
    return new StoreUnavailable("unreachable", "this instance was released; registering again");
  }
  return err;
}
