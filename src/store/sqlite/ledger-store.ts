/**
 * The ledger's storage port on the embedded SQLite database (see billing/ledger-store.ts for what
 * each operation promises). One process owns the data directory (data-dir-lock.ts), so this store
 * is the only writer of holds; the CLI may still add credits or accounts from another process.
 *
 * Every write goes through one in-order group-commit queue (group-commit.ts), and each decision is
 * taken by SQL inside its write, at its place in the queue: a hold is granted by
 *   UPDATE accounts SET reserved = reserved + :amount WHERE id = :id AND balance - reserved >= :amount
 * so no two holds (nor a hold and a CLI deduction) can spend the same money, whichever process
 * wrote first. Nothing is decided from a read taken earlier. A hold resolves once its batch is
 * COMMITTED (no fsync: a hold lost in a crash is voided at restart anyway), which is what lets a
 * full disk or a locked database refuse the request before any upstream is called. Charges and
 * credits resolve once fsynced.
 */
import type { Store } from "../database";
import {
  StoreUnavailable,
  type HoldRequest, type LedgerEntryRow, type LedgerStore, type PostRequest, type PostResult, type ReserveResult,
} from "../../billing/ledger-store";
import { invalidField, notFound } from "../../errors";
import { formatUsd, MAX_BALANCE } from "../../billing/money";
import { GroupCommit, type GroupCommitOptions } from "./group-commit";
import { StoredResponseWriter } from "./responses";

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The start of a key's current period, from its limit_reset and the starts bound as ?4 ?5 ?6. */
const PERIOD = "(CASE limit_reset WHEN 'daily' THEN ?4 WHEN 'weekly' THEN ?5 WHEN 'monthly' THEN ?6 ELSE 0 END)";

export type SqliteLedgerOptions = Omit<GroupCommitOptions, "onFailure" | "onFatal">;

export class SqliteLedgerStore implements LedgerStore {
  readonly commits: GroupCommit;
  private readonly failureListeners: ((e: StoreUnavailable) => void)[] = [];
  private readonly fatalListeners: ((e: StoreUnavailable) => void)[] = [];
  private readonly q;
  private readonly responses: StoredResponseWriter;

  /** @param db the full-sync connection every ledger write goes through (busy_timeout 0 when serving) */
  constructor(private readonly db: Store, options: SqliteLedgerOptions = {}) {
    this.commits = new GroupCommit(db, {
      ...options,
      onFailure: (e) => this.failureListeners.forEach((l) => l(e)),
      onFatal: (e) => this.fatalListeners.forEach((l) => l(e)),
    });
    this.responses = new StoredResponseWriter(db);
    this.q = {
      grantHold: db.query<never, [number, string]>("UPDATE accounts SET reserved = reserved + ?1 WHERE id = ?2 AND balance - reserved >= ?1"),
      insertHold: db.query<never, [string, string, number, string, string, number]>(
        "INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, created_at) VALUES (?, ?, ?, ?, ?, 'pending', ?)",
      ),
      account: db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?"),
      // The key's share of a hold (migration 007): in the period its limit_reset picks, what is
      // spent and reserved plus this hold must stay within spend_limit. The period rolls over here.
      grantKey: db.query<never, [number, string, string, number, number, number]>(
        `UPDATE api_keys SET period_spent = CASE WHEN period_start = ${PERIOD} THEN period_spent ELSE 0 END,
                             period_start = ${PERIOD}, reserved = reserved + ?1
          WHERE id = ?2 AND account_id = ?3
            AND (spend_limit IS NULL OR spend_limit - (CASE WHEN period_start = ${PERIOD} THEN period_spent ELSE 0 END) - reserved >= ?1)`,
      ),
      keyLeft: db.query<{ spend_limit: number | null; left: number }, [string, string, null, number, number, number]>(
        `SELECT spend_limit, spend_limit - (CASE WHEN period_start = ${PERIOD} THEN period_spent ELSE 0 END) - reserved AS left
           FROM api_keys WHERE id = ?1 AND account_id = ?2 AND ?3 IS NULL`,
      ),
      insertKeyHold: db.query<never, [string, string, number, string, string, number, string]>(
        `INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, created_at, key_id, period_start)
         VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, (SELECT period_start FROM api_keys WHERE id = ?7))`,
      ),
      // Reads and then writes rather than UPDATE ... RETURNING, which costs SQLite about twice as
      // much; both run in the same write, inside the batch's transaction, so nothing comes between.
      pendingHold: db.query<{ account_id: string; amount: number; endpoint: string; model: string }, [string]>(
        "SELECT account_id, amount, endpoint, model FROM holds WHERE request_id = ? AND state = 'pending'",
      ),
      closeHold: db.query<never, [string, number, string]>("UPDATE holds SET state = ?, closed_at = ? WHERE request_id = ? AND state = 'pending'"),
      debit: db.query<never, [number, number, string]>("UPDATE accounts SET balance = balance - ?1, reserved = reserved - ?2 WHERE id = ?3"),
      balance: db.query<{ balance: number }, [string]>("SELECT balance FROM accounts WHERE id = ?"),
      unreserve: db.query<never, [number, string]>("UPDATE accounts SET reserved = reserved - ? WHERE id = ?"),
      existingCharge: db.query<{ amount: number; balance_after: number }, [string]>(
        "SELECT amount, balance_after FROM ledger_entries WHERE request_id = ? AND kind = 'charge'",
      ),
      setBalance: db.query<never, [number, string]>("UPDATE accounts SET balance = ? WHERE id = ?"),
      insertAccount: db.query<never, [string, string, number]>("INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)"),
      insertEntry: db.query(
        `INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
           input_tokens, output_tokens, characters, reason, created_at, cached_tokens, cache_write_tokens, cache_saved)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      expiredHolds: db.query<{ request_id: string; account_id: string; amount: number }, [number]>(
        "SELECT request_id, account_id, amount FROM holds WHERE state = 'pending' AND created_at < ? LIMIT 1000",
      ),
      pendingCount: db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending'"),
      entries: db.query<LedgerEntryRow, [string, number]>(
        `SELECT id, account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier, input_tokens, output_tokens,
                cached_tokens, cache_write_tokens, cache_saved, characters, reason, created_at
           FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT ?`,
      ),
    };
  }

  reserve(h: HoldRequest): Promise<ReserveResult> {
    if (!validAmount(h.amount)) return Promise.reject(new RangeError(`bad hold amount ${h.amount}`));
    return this.commits.submit((): ReserveResult => {
      if (this.q.grantHold.run(h.amount, h.accountId).changes === 0) {
        const acct = this.q.account.get(h.accountId);
        return { ok: false, available: acct ? Math.max(0, acct.balance - acct.reserved) : 0 };
      }
      if (h.key) {
        const { id, periods: p } = h.key;
        if (this.q.grantKey.run(h.amount, id, h.accountId, p.day, p.week, p.month).changes === 0) {
          // Same write: the account's grant is taken back before anything else sees it.
          this.q.unreserve.run(h.amount, h.accountId);
          const key = this.q.keyLeft.get(id, h.accountId, null, p.day, p.week, p.month);
          if (!key) throw new Error(`reserve of ${h.requestId}: no key ${id} for account ${h.accountId}`);
          return { ok: false, available: Math.max(0, key.left), keyLimit: key.spend_limit ?? 0 };
        }
        this.q.insertKeyHold.run(h.requestId, h.accountId, h.amount, h.endpoint, h.model, h.createdAt ?? nowSeconds(), id);
        return { ok: true };
      }
      // A repeated request id fails here, and the grant above is rolled back with it (see group-commit.ts).
      this.q.insertHold.run(h.requestId, h.accountId, h.amount, h.endpoint, h.model, h.createdAt ?? nowSeconds());
      return { ok: true };
    }, "commit");
  }

  post(p: PostRequest): Promise<PostResult> {
    if (!validAmount(p.amount)) return Promise.reject(new RangeError(`bad charge amount ${p.amount}`));
    return this.commits.submit((): PostResult => {
      const at = nowSeconds();
      // Only when nothing is pending can this be a repeat.
      const hold = this.q.pendingHold.get(p.requestId);
      if (!hold) {
        const existing = this.q.existingCharge.get(p.requestId);
        if (existing) return { charged: -existing.amount, balanceAfter: existing.balance_after, fresh: false };
        throw new Error(`post of ${p.requestId}: no pending hold`);
      }
      // The store's own check of the ceiling.
      if (p.amount > hold.amount) throw new Error(`post of ${p.requestId}: ${p.amount} exceeds its hold of ${hold.amount}`);
      this.q.closeHold.run("posted", at, p.requestId);
      this.q.debit.run(p.amount, hold.amount, hold.account_id);
      const balanceAfter = this.q.balance.get(hold.account_id)!.balance;
      this.q.insertEntry.run(
        hold.account_id, "charge", -p.amount, balanceAfter, p.requestId, hold.endpoint, hold.model, p.serviceTier,
        p.inputTokens ?? 0, p.outputTokens ?? 0, p.characters ?? 0, p.note ?? null, at, p.cachedTokens ?? 0, p.cacheWriteTokens ?? 0, p.cacheSaved ?? 0,
      );
      if (p.storedResponse) this.responses.write(p.storedResponse);
      return { charged: p.amount, balanceAfter, fresh: true };
    }, "durable");
  }

  void(requestId: string): Promise<boolean> {
    return this.commits.submit(() => {
      const row = this.q.pendingHold.get(requestId);
      if (!row) return false;
      this.q.closeHold.run("voided", nowSeconds(), requestId);
      this.q.unreserve.run(row.amount, row.account_id);
      return true;
    }, "commit");
  }

  adjust(accountId: string, amount: number, reason: string): Promise<{ balanceAfter: number }> {
    if (!Number.isSafeInteger(amount) || amount === 0) return Promise.reject(new RangeError(`bad adjustment ${amount}`));
    return this.commits.submit(() => {
      const acct = this.q.account.get(accountId);
      if (!acct) throw notFound(`No account with id '${accountId}'.`);
      if (amount < 0 && acct.balance - acct.reserved + amount < 0) {
        throw invalidField("amount", "the deduction exceeds the available balance (balance minus reserved)");
      }
      const balanceAfter = acct.balance + amount;
      if (balanceAfter > MAX_BALANCE) {
        throw invalidField("amount", `the balance may not exceed ${formatUsd(MAX_BALANCE)} USD`);
      }
      this.q.setBalance.run(balanceAfter, accountId);
      this.q.insertEntry.run(accountId, amount > 0 ? "credit" : "debit", amount, balanceAfter, null, null, null, null, 0, 0, 0, reason, nowSeconds(), 0, 0, 0);
      return { balanceAfter };
    });
  }

  createAccount(a: { id: string; name: string; createdAt: number }, credits: number, reason: string): Promise<void> {
    if (!Number.isSafeInteger(credits) || credits < 0) return Promise.reject(new RangeError(`bad opening credits ${credits}`));
    return this.commits.submit(() => {
      if (credits > MAX_BALANCE) {
        throw invalidField("credits", `the balance may not exceed ${formatUsd(MAX_BALANCE)} USD`);
      }
      this.q.insertAccount.run(a.id, a.name, a.createdAt);
      if (credits === 0) return;
      this.q.setBalance.run(credits, a.id);
      this.q.insertEntry.run(a.id, "credit", credits, credits, null, null, null, null, 0, 0, 0, reason, a.createdAt, 0, 0, 0);
    });
  }

  /**
   * At start-up no request is in flight and no other server shares the data directory, so every
   * pending hold belongs to a request that died with the previous process: void them all and
   * recompute `reserved` from what is left (nothing).
   */
  releaseAbandoned(): Promise<number> {
    return this.commits.submit(() => {
      const n = this.db.query("UPDATE holds SET state = 'voided', closed_at = ? WHERE state = 'pending'").run(nowSeconds()).changes;
      this.db.run(
        "UPDATE accounts SET reserved = (SELECT COALESCE(SUM(amount), 0) FROM holds h WHERE h.account_id = accounts.id AND h.state = 'pending')",
      );
      return n;
    });
  }

  expireHolds(createdBefore: number): Promise<string[]> {
    return this.commits.submit(() => {
      const expired = this.q.expiredHolds.all(createdBefore);
      const at = nowSeconds();
      for (const h of expired) {
        this.q.closeHold.run("voided", at, h.request_id);
        this.q.unreserve.run(h.amount, h.account_id);
      }
      return expired.map((h) => h.request_id);
    }, "commit");
  }

  async pendingHolds(): Promise<number> {
    return this.q.pendingCount.get()!.n;
  }

  async entries(accountId: string, limit: number): Promise<LedgerEntryRow[]> {
    return this.q.entries.all(accountId, limit);
  }

  onFailure(listener: (e: StoreUnavailable) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * Hears a failed fsync (or an I/O error on commit): the store writes nothing more, and what this
   * connection shows may not be what the disk holds. Its owner stops the process (services.ts).
   */
  onFatal(listener: (e: StoreUnavailable) => void): void {
    this.fatalListeners.push(listener);
  }

  /** Writes everything queued and syncs it (shutdown). */
  close(): void {
    this.commits.close();
  }

  /** batches: transactions; writes: charges and credits (fsynced); holds: hold and void writes. */
  get commitStats() {
    return { batches: this.commits.batches, writes: this.commits.writes, holds: this.commits.background };
  }
}

const validAmount = (amount: number) => Number.isSafeInteger(amount) && amount >= 0;
