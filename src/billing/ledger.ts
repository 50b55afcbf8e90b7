/**
 * The credit ledger as two-phase transfers (after TigerBeetle's pending → post/void):
 *   reserve()  creates a pending hold and raises the account's `reserved`, or refuses (402);
 *   settle()   posts the hold: one immutable charge entry, balance lowered, hold closed;
 *   release()  voids the hold: nothing charged.
 *
 * Holds are decided in memory and written behind: reserve() reads the account's balance and
 * persisted `reserved` (one prepared SELECT, so credits added by the CLI from another process are
 * seen), subtracts what this process reserved but has not written yet, and decides synchronously
 * (JS is single-threaded, so concurrent requests cannot overspend). The hold row and the `reserved`
 * increase are queued on the same in-order group-commit queue as settlements, so a hold is always
 * written before its settle or release, and nobody waits for it (a hold lost in a crash is voided
 * on restart anyway). Settlements are group-committed with full sync, and settle() resolves only
 * once durable.
 *
 * Coalescing: a settle that arrives while its hold's write is still queued (most of them under
 * load: the hold waits for the next batch, the upstream usually answers first) takes over the
 * hold row: the queued hold write only raises `reserved` (exactly as before), and the settle
 * inserts the row already posted instead of inserting it pending and updating it later. Every
 * account column therefore moves exactly as with insert → post, at the same points in the queue;
 * only the pending row is absent until the charge commits (pendingHolds() counts it in memory).
 * If the settle fails, the pending row is written after all, so release() voids it as usual.
 */
import type { Store } from "../store/database";
import { GroupCommit } from "./group-commit";
import { formatUsd, UNITS_PER_USD } from "./money";
import { DomainError, InternalError } from "../errors";
import { nowSeconds } from "../accounts/accounts";

export interface HoldRequest {
  requestId: string;
  accountId: string;
  amount: number;
  endpoint: string;
  model: string;
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  characters?: number;
}

export interface ChargeRequest extends Usage {
  requestId: string;
  amount: number;
  serviceTier: string;
}

export interface Settlement {
  requestId: string;
  /** What was actually taken from the balance. */
  charged: number;
  balanceAfter: number;
}

/** A charge just made durable, for metrics. */
export interface SettledCharge {
  requestId: string;
  accountId: string;
  endpoint: string;
  model: string;
  serviceTier: string;
  charged: number;
  inputTokens: number;
  outputTokens: number;
  characters: number;
}

export type ReserveOutcome = { ok: true } | { ok: false; available: number };

/** A hold decided in memory whose row is still queued; a settle may take its place. */
interface QueuedHold {
  h: HoldRequest;
  createdAt: number;
  /** A settle took over the row: the hold write only raises `reserved`, the settle inserts the row posted. */
  superseded: boolean;
  /** The hold's `reserved` increase ran (and, once its batch is over, committed). */
  applied: boolean;
}

interface HoldRow {
  request_id: string;
  account_id: string;
  amount: number;
  endpoint: string;
  model: string;
  state: string;
}

/**
 * The largest balance an account may hold: 9 million USD. Balances stay far inside the range of
 * exact integers, so every view of them formats exactly.
 */
export const MAX_BALANCE = 9_000_000 * UNITS_PER_USD;

export class Ledger {
  private readonly commits: GroupCommit;
  private readonly settledListeners: ((c: SettledCharge) => void)[] = [];
  private readonly q;
  /**
   * Per account: the amounts of holds decided in memory whose rows are still queued, not yet in
   * `accounts.reserved`. Effective reserved is the persisted column plus this.
   */
  private readonly unwritten = new Map<string, number>();
  /** Holds queued and not yet committed, for pendingHolds(). */
  private queuedHolds = 0;
  /** Holds whose write has not run yet, by request id (what a settle may coalesce with). */
  private readonly unrunHolds = new Map<string, QueuedHold>();
  private coalesced = 0;

  /** @param db the full-sync connection every ledger write goes through */
  constructor(private readonly db: Store, groupCommitBatch = 512) {
    this.commits = new GroupCommit(db, groupCommitBatch);
    this.q = {
      insertHold: db.query(
        "INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, created_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
      ),
      insertPostedHold: db.query(
        "INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, created_at, closed_at) VALUES (?, ?, ?, ?, ?, 'posted', ?, ?)",
      ),
      addReserved: db.query("UPDATE accounts SET reserved = reserved + ? WHERE id = ?"),
      voidHold: db.query<{ amount: number; account_id: string }, [number, string]>(
        "UPDATE holds SET state = 'voided', closed_at = ? WHERE request_id = ? AND state = 'pending' RETURNING amount, account_id",
      ),
      account: db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?"),
      post: db.query<Omit<HoldRow, "request_id" | "state">, [number, string]>(
        "UPDATE holds SET state = 'posted', closed_at = ? WHERE request_id = ? AND state = 'pending' RETURNING account_id, amount, endpoint, model",
      ),
      debit: db.query<{ balance: number }, [number, number, string]>(
        "UPDATE accounts SET balance = balance - ?1, reserved = reserved - ?2 WHERE id = ?3 RETURNING balance",
      ),
      existingCharge: db.query<{ amount: number; balance_after: number }, [string]>(
        "SELECT amount, balance_after FROM ledger_entries WHERE request_id = ? AND kind = 'charge'",
      ),
      pendingCount: db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending'"),
      insertEntry: db.query(
        `INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
           input_tokens, output_tokens, characters, reason, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
    };
  }

  private addUnwritten(accountId: string, delta: number): void {
    const next = (this.unwritten.get(accountId) ?? 0) + delta;
    if (next === 0) this.unwritten.delete(accountId);
    else this.unwritten.set(accountId, next);
  }

  /** Holds `amount` against the account's available balance, or says how much is available. */
  reserve(h: HoldRequest): ReserveOutcome {
    if (!Number.isSafeInteger(h.amount) || h.amount < 0) throw new RangeError(`bad hold amount ${h.amount}`);
    const acct = this.q.account.get(h.accountId);
    if (!acct) return { ok: false, available: 0 };
    const available = acct.balance - acct.reserved - (this.unwritten.get(h.accountId) ?? 0);
    if (available < h.amount) return { ok: false, available: Math.max(0, available) };
    this.addUnwritten(h.accountId, h.amount);
    this.queuedHolds++;
    const queued: QueuedHold = { h, createdAt: nowSeconds(), superseded: false, applied: false };
    this.unrunHolds.set(h.requestId, queued);
    this.commits.enqueue(
      () => {
        // From here on (batches run synchronously) no settle can take over this row.
        if (this.unrunHolds.get(h.requestId) === queued) this.unrunHolds.delete(h.requestId);
        if (!queued.superseded) this.q.insertHold.run(h.requestId, h.accountId, h.amount, h.endpoint, h.model, queued.createdAt);
        this.q.addReserved.run(h.amount, h.accountId);
        queued.applied = true;
      },
      // Committed: the column now holds the amount. Failed: nobody holds it (its settle will find
      // no pending hold and charge nothing). Either way it leaves the in-memory total. A hold whose
      // row a settle took over stays in pendingHolds() until that settle's commit.
      (ok) => {
        if (this.unrunHolds.get(h.requestId) === queued) this.unrunHolds.delete(h.requestId);
        if (!ok) queued.applied = false;
        if (!queued.superseded) this.queuedHolds--;
        this.addUnwritten(h.accountId, -h.amount);
      },
    );
    return { ok: true };
  }

  /**
   * Voids a pending hold; a no-op when it is already closed. Releases happen only on failures
   * and cancellations, so instead of waiting for the next batch the queue (hold row included) is
   * committed at once, without waiting for an fsync: when this returns, the column, the account
   * views and the in-memory total no longer count the hold.
   */
  release(requestId: string): void {
    this.commits.enqueue(() => {
      const row = this.q.voidHold.get(nowSeconds(), requestId);
      if (row) this.q.addReserved.run(-row.amount, row.account_id);
    });
    this.commits.commitNow();
  }

  /**
   * Posts the hold with the actual cost and resolves once the charge is durable.
   * Idempotent per request id: a second settle returns the first charge, never a second one.
   * The charge never exceeds what the account can pay, so the balance never goes negative.
   */
  settle(c: ChargeRequest): Promise<Settlement> {
    if (!Number.isSafeInteger(c.amount) || c.amount < 0) throw new RangeError(`bad charge amount ${c.amount}`);
    let fresh: SettledCharge | null = null;
    const queued = this.unrunHolds.get(c.requestId);
    const durable = queued ? this.settleQueued(queued, c, (f) => (fresh = f)) : this.commits.submit((): Settlement => {
      fresh = null;
      // Posting first saves two lookups on the usual path: a pending hold has no charge yet (both
      // change in this one savepoint), and only when nothing was pending can this be a repeat.
      const hold = this.q.post.get(nowSeconds(), c.requestId);
      if (!hold) {
        const existing = this.q.existingCharge.get(c.requestId);
        if (existing) return { requestId: c.requestId, charged: -existing.amount, balanceAfter: existing.balance_after };
        throw new InternalError("settle without a pending hold");
      }
      const charge = this.charge({ accountId: hold.account_id, amount: hold.amount, endpoint: hold.endpoint, model: hold.model }, c, nowSeconds());
      fresh = charge.fresh;
      return charge.settlement;
    });
    // Listeners hear only of charges that are durable, once each (not of idempotent repeats).
    return durable.then((settlement) => {
      const charge = fresh as SettledCharge | null;
      if (charge) for (const l of this.settledListeners) {
        try {
          l(charge);
        } catch {
          // A metrics listener must never turn a durable charge into a failed request.
        }
      }
      return settlement;
    });
  }

  /**
   * Settles a hold whose row has not been written yet (see Coalescing above): the row is inserted
   * already posted, and the charge is taken exactly as the post would take it — the hold's amount
   * is in `reserved` by now, since its write comes first in the queue.
   */
  private settleQueued(queued: QueuedHold, c: ChargeRequest, noteFresh: (f: SettledCharge | null) => void): Promise<Settlement> {
    const { h } = queued;
    this.unrunHolds.delete(h.requestId);
    queued.superseded = true;
    this.coalesced++;
    return this.commits.submit(
      (): Settlement => {
        noteFresh(null);
        // Its hold write failed: as with no pending hold on the usual path.
        if (!queued.applied) throw new InternalError("settle without a pending hold");
        const closedAt = nowSeconds();
        this.q.insertPostedHold.run(h.requestId, h.accountId, h.amount, h.endpoint, h.model, queued.createdAt, closedAt);
        const charge = this.charge(h, c, closedAt);
        noteFresh(charge.fresh);
        return charge.settlement;
      },
      (ok) => {
        this.queuedHolds--;
        // Not charged, but its amount is in `reserved`: write the pending row the usual path would
        // have, so the caller's release() voids it (and a restart's releaseAbandoned() sees it).
        if (!ok && queued.applied) {
          this.commits.enqueue(() => {
            this.q.insertHold.run(h.requestId, h.accountId, h.amount, h.endpoint, h.model, queued.createdAt);
          });
        }
      },
    );
  }

  /**
   * Inside a group-commit write, for a hold just posted: takes the charge from the balance (never
   * what other requests hold, never below zero), releases the hold's reservation, and writes the
   * one immutable charge entry.
   */
  private charge(
    hold: { accountId: string; amount: number; endpoint: string; model: string },
    c: ChargeRequest,
    at: number,
  ): { settlement: Settlement; fresh: SettledCharge } {
    const acct = this.q.account.get(hold.accountId)!;
    const payable = acct.balance - (acct.reserved - hold.amount);
    const charged = Math.max(0, Math.min(c.amount, payable));
    const balanceAfter = this.q.debit.get(charged, hold.amount, hold.accountId)!.balance;
    this.q.insertEntry.run(
      hold.accountId, "charge", -charged, balanceAfter, c.requestId, hold.endpoint, hold.model, c.serviceTier,
      c.inputTokens ?? 0, c.outputTokens ?? 0, c.characters ?? 0, charged < c.amount ? "capped at available balance" : null, at,
    );
    return {
      settlement: { requestId: c.requestId, charged, balanceAfter },
      fresh: {
        requestId: c.requestId, accountId: hold.accountId, endpoint: hold.endpoint, model: hold.model, serviceTier: c.serviceTier,
        charged, inputTokens: c.inputTokens ?? 0, outputTokens: c.outputTokens ?? 0, characters: c.characters ?? 0,
      },
    };
  }

  /** Calls `listener` after each new charge is durable (metrics). */
  onSettled(listener: (c: SettledCharge) => void): void {
    this.settledListeners.push(listener);
  }

  /** Holds not yet posted or voided (requests in flight, or abandoned before a restart). */
  pendingHolds(): number {
    return this.q.pendingCount.get()!.n + this.queuedHolds;
  }

  /**
   * Adds (positive) or deducts (negative) credits as one immutable entry. A deduction may not
   * dig into money that is reserved by requests in flight.
   */
  adjust(accountId: string, amount: number, reason: string): { balanceAfter: number } {
    if (!Number.isSafeInteger(amount) || amount === 0) throw new RangeError(`bad adjustment ${amount}`);
    return this.db
      .transaction(() => {
        const acct = this.q.account.get(accountId);
        if (!acct) throw new DomainError("not_found", "not_found", `No account with id '${accountId}'.`);
        if (amount < 0 && acct.balance - acct.reserved - (this.unwritten.get(accountId) ?? 0) + amount < 0) {
          throw new DomainError("invalid_request", "invalid_value", "Invalid 'amount': the deduction exceeds the available balance (balance minus reserved).", "amount");
        }
        const balanceAfter = acct.balance + amount;
        if (balanceAfter > MAX_BALANCE) {
          throw new DomainError("invalid_request", "invalid_value", `Invalid 'amount': the balance may not exceed ${formatUsd(MAX_BALANCE)} USD.`, "amount");
        }
        this.db.query("UPDATE accounts SET balance = ? WHERE id = ?").run(balanceAfter, accountId);
        this.q.insertEntry.run(
          accountId, amount > 0 ? "credit" : "debit", amount, balanceAfter, null, null, null, null, 0, 0, 0, reason, nowSeconds(),
        );
        return { balanceAfter };
      })
      .immediate();
  }

  /**
   * At start-up no request is in flight, so every pending hold belongs to a request that died
   * with the previous process: void them all and recompute `reserved` from what is left (nothing).
   */
  releaseAbandoned(): number {
    // Holds still queued in memory belong to no request either once this runs: write them first.
    this.commits.flush();
    return this.db
      .transaction(() => {
        const n = this.db.query("UPDATE holds SET state = 'voided', closed_at = ? WHERE state = 'pending'").run(nowSeconds()).changes;
        this.db.run(
          "UPDATE accounts SET reserved = (SELECT COALESCE(SUM(amount), 0) FROM holds h WHERE h.account_id = accounts.id AND h.state = 'pending')",
        );
        return n;
      })
      .immediate();
  }

  entries(accountId: string, limit = 1000) {
    return this.db
      .query("SELECT * FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT ?")
      .all(accountId, limit) as Record<string, unknown>[];
  }

  /** Flushes queued settlements now (shutdown). */
  flush(): void {
    this.commits.flush();
  }

  /**
   * writes: settlements (waited for); holds: hold and release writes, committed behind them;
   * coalesced: settlements that wrote their still-queued hold themselves.
   */
  get commitStats() {
    return { batches: this.commits.batches, writes: this.commits.writes, holds: this.commits.background, coalesced: this.coalesced };
  }
}
