/**
 * The credit ledger as two-phase transfers (after TigerBeetle's pending → post/void):
 *   reserve()  creates a pending hold and raises the account's `reserved`, or refuses (402);
 *   settle()   posts the hold: one immutable charge entry, balance lowered, hold closed;
 *   release()  voids the hold: nothing charged.
 * Holds are written without waiting for fsync (a hold lost in a crash is voided on restart anyway);
 * settlements are group-committed with full sync, and settle() resolves only once durable.
 */
import type { Store } from "../store/database";
import { GroupCommit } from "./group-commit";
import { ApiError } from "../http/errors";
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

interface HoldRow {
  request_id: string;
  account_id: string;
  amount: number;
  endpoint: string;
  model: string;
  state: string;
}

export class Ledger {
  private readonly commits: GroupCommit;
  private readonly settledListeners: ((c: SettledCharge) => void)[] = [];
  private readonly q;

  /**
   * @param db the full-sync connection (settlements, credits)
   * @param holdsDb a second connection to the same file with synchronous=NORMAL, for holds
   */
  constructor(private readonly db: Store, private readonly holdsDb: Store = db, groupCommitBatch = 512) {
    this.commits = new GroupCommit(db, groupCommitBatch);
    this.q = {
      reserve: holdsDb.query<{ id: string }, [number, string, number]>(
        "UPDATE accounts SET reserved = reserved + ?1 WHERE id = ?2 AND balance - reserved >= ?3 RETURNING id",
      ),
      available: holdsDb.query<{ available: number }, [string]>("SELECT balance - reserved AS available FROM accounts WHERE id = ?"),
      insertHold: holdsDb.query(
        "INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, created_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
      ),
      holdH: holdsDb.query<HoldRow, [string]>("SELECT * FROM holds WHERE request_id = ?"),
      voidHoldH: holdsDb.query("UPDATE holds SET state = 'voided', closed_at = ? WHERE request_id = ? AND state = 'pending'"),
      unreserveH: holdsDb.query("UPDATE accounts SET reserved = reserved - ? WHERE id = ?"),
      hold: db.query<HoldRow, [string]>("SELECT * FROM holds WHERE request_id = ?"),
      account: db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?"),
      post: db.query("UPDATE holds SET state = 'posted', closed_at = ? WHERE request_id = ? AND state = 'pending'"),
      debit: db.query<{ balance: number }, [number, number, string]>(
        "UPDATE accounts SET balance = balance - ?1, reserved = reserved - ?2 WHERE id = ?3 RETURNING balance",
      ),
      existingCharge: db.query<{ amount: number; balance_after: number }, [string]>(
        "SELECT amount, balance_after FROM ledger_entries WHERE request_id = ? AND kind = 'charge'",
      ),
      insertEntry: db.query(
        `INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
           input_tokens, output_tokens, characters, reason, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
    };
  }

  /** Holds `amount` against the account's available balance, or says how much is available. */
  reserve(h: HoldRequest): ReserveOutcome {
    if (!Number.isSafeInteger(h.amount) || h.amount < 0) throw new RangeError(`bad hold amount ${h.amount}`);
    const ok = this.holdsDb
      .transaction(() => {
        if (!this.q.reserve.get(h.amount, h.accountId, h.amount)) return false;
        this.q.insertHold.run(h.requestId, h.accountId, h.amount, h.endpoint, h.model, nowSeconds());
        return true;
      })
      .immediate();
    if (ok) return { ok: true };
    return { ok: false, available: this.q.available.get(h.accountId)?.available ?? 0 };
  }

  /** Voids a pending hold; a no-op when it is already closed. */
  release(requestId: string): void {
    this.holdsDb
      .transaction(() => {
        const hold = this.q.holdH.get(requestId);
        if (!hold || hold.state !== "pending") return;
        this.q.voidHoldH.run(nowSeconds(), requestId);
        this.q.unreserveH.run(hold.amount, hold.account_id);
      })
      .immediate();
  }

  /**
   * Posts the hold with the actual cost and resolves once the charge is durable.
   * Idempotent per request id: a second settle returns the first charge, never a second one.
   * The charge never exceeds what the account can pay, so the balance never goes negative.
   */
  settle(c: ChargeRequest): Promise<Settlement> {
    if (!Number.isSafeInteger(c.amount) || c.amount < 0) throw new RangeError(`bad charge amount ${c.amount}`);
    let fresh: SettledCharge | null = null;
    const durable = this.commits.submit((): Settlement => {
      fresh = null;
      const existing = this.q.existingCharge.get(c.requestId);
      if (existing) return { requestId: c.requestId, charged: -existing.amount, balanceAfter: existing.balance_after };
      const hold = this.q.hold.get(c.requestId);
      if (!hold || hold.state !== "pending") throw new ApiError(500, "internal_error", "settle without a pending hold");
      const acct = this.q.account.get(hold.account_id)!;
      // Never spend what other requests hold, nor below zero.
      const payable = acct.balance - (acct.reserved - hold.amount);
      const charged = Math.max(0, Math.min(c.amount, payable));
      const balanceAfter = this.q.debit.get(charged, hold.amount, hold.account_id)!.balance;
      this.q.post.run(nowSeconds(), c.requestId);
      this.q.insertEntry.run(
        hold.account_id, "charge", -charged, balanceAfter, c.requestId, hold.endpoint, hold.model, c.serviceTier,
        c.inputTokens ?? 0, c.outputTokens ?? 0, c.characters ?? 0, charged < c.amount ? "capped at available balance" : null,
        nowSeconds(),
      );
      fresh = {
        requestId: c.requestId, accountId: hold.account_id, endpoint: hold.endpoint, model: hold.model, serviceTier: c.serviceTier,
        charged, inputTokens: c.inputTokens ?? 0, outputTokens: c.outputTokens ?? 0, characters: c.characters ?? 0,
      };
      return { requestId: c.requestId, charged, balanceAfter };
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

  /** Calls `listener` after each new charge is durable (metrics). */
  onSettled(listener: (c: SettledCharge) => void): void {
    this.settledListeners.push(listener);
  }

  /** Holds not yet posted or voided (requests in flight, or abandoned before a restart). */
  pendingHolds(): number {
    return (this.holdsDb.query("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending'").get() as { n: number }).n;
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
        if (!acct) throw new ApiError(404, "not_found", `No account with id '${accountId}'.`);
        if (amount < 0 && acct.balance - acct.reserved + amount < 0) {
          throw new ApiError(400, "invalid_value", "Invalid 'amount': the deduction exceeds the available balance (balance minus reserved).", "amount");
        }
        const balanceAfter = acct.balance + amount;
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

  get commitStats() {
    return { batches: this.commits.batches, writes: this.commits.writes };
  }
}
