/**
 * The ledger's storage port on the embedded SQLite database (see billing/ledger-store.ts for what
 * each operation promises). One process owns the data directory (data-dir-lock.ts), so its hold
 * book (billing/hold-book.ts) knows everything that is held: a hold is granted in memory, against
 * the account's balance (and its key's figures) in the same turn as the booking — the balance
 * minus what is booked must cover it — and nothing is written for it. Those figures are read once
 * and cached until a write changes them (grant-figures.ts). Another process (the CLI) may only add
 * credits to a data directory a server holds (cli/commands refuses deductions there), so a balance
 * read here can only have grown since.
 *
 * Charges and credits go through one in-order group-commit queue (group-commit.ts) and resolve
 * once fsynced. A charge's write inserts its immutable entry and takes its amount from the
 * batch's running balance and key spend, which are written once per batch just before it commits
 * (charge-batch.ts); so the book stops counting its hold at the commit (the balance has it by then).
 */
import type { Store } from "../database";
import { StoreUnavailable, type GrantRequest, type GrantResult, type LedgerEntryRow, type LedgerStore, type PostRequest, type PostResult } from "../../billing/ledger-store";
import type { HoldBook } from "../../billing/hold-book";
import { periodStarts, spentInPeriod } from "../../billing/key-periods";
import { InternalError, invalidField, notFound } from "../../errors";
import { formatUsd, MAX_BALANCE } from "../../billing/money";
import { GroupCommit, type GroupCommitOptions } from "./group-commit";
import { StoredResponseWriter } from "./responses";
import { ChargeBatch } from "./charge-batch";
import { GrantFigures } from "./grant-figures";

const nowSeconds = () => Math.floor(Date.now() / 1000);

export type SqliteLedgerOptions = Omit<GroupCommitOptions, "onFailure" | "onFatal" | "batchState"> & {
  /**
   * A server holds this data directory (this store is the CLI's, beside it): deductions are refused,
   * since only the server knows what its requests in flight hold.
   */
  besideServer?: boolean;
};

/** A charge's write found its request already charged; post() answers with that first charge. */
class RepeatedCharge extends Error {}

export class SqliteLedgerStore implements LedgerStore {
  readonly commits: GroupCommit;
  private readonly failureListeners: ((e: StoreUnavailable) => void)[] = [];
  private readonly fatalListeners: ((e: StoreUnavailable) => void)[] = [];
  private readonly q;
  private readonly responses: StoredResponseWriter;
  /** The batch's running balances and key spend, written once per batch (charge-batch.ts). */
  private readonly charges: ChargeBatch;
  /** What grants read, cached until a write changes it (grant-figures.ts). */
  private readonly figures: GrantFigures;

  /** @param db the full-sync connection every ledger write goes through (busy_timeout 0 when serving) */
  private readonly besideServer: boolean;

  constructor(private readonly db: Store, options: SqliteLedgerOptions = {}) {
    this.besideServer = options.besideServer ?? false;
    this.charges = new ChargeBatch(db);
    this.figures = GrantFigures.of(db);
    this.commits = new GroupCommit(db, {
      ...options,
      batchState: this.charges,
      onFailure: (e) => this.failureListeners.forEach((l) => l(e)),
      onFatal: (e) => this.fatalListeners.forEach((l) => l(e)),
    });
    this.responses = new StoredResponseWriter(db);
    this.q = {
      account: db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?"),
      existingCharge: db.query<{ amount: number; balance_after: number }, [string]>(
        "SELECT amount, balance_after FROM ledger_entries WHERE request_id = ? AND kind = 'charge'",
      ),
      setBalance: db.query<never, [number, string]>("UPDATE accounts SET balance = ? WHERE id = ?"),
      insertAccount: db.query<never, [string, string, number]>("INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)"),
      insertEntry: db.query(
        `INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
           input_tokens, output_tokens, characters, reason, created_at, key_id, counted_at, cached_tokens, cache_write_tokens, cache_saved)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // A charge of a request already charged is not written (the unique index ledger_charge_once): changes is 0.
      insertCharge: db.query(
        `INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
           input_tokens, output_tokens, characters, reason, created_at, key_id, counted_at, cached_tokens, cache_write_tokens, cache_saved)
         VALUES (?, 'charge', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (request_id) WHERE kind = 'charge' DO NOTHING`,
      ),
      pendingCount: db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending'"),
      entries: db.query<LedgerEntryRow, [string, number]>(
        `SELECT id, account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier, input_tokens, output_tokens,
                cached_tokens, cache_write_tokens, cache_saved, characters, reason, created_at
           FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT ?`,
      ),
    };
  }

  /** Synchronous: the account's (and key's) figures, and the booking, in the same turn. */
  grant(g: GrantRequest, book: HoldBook): GrantResult {
    if (!validAmount(g.amount)) throw new RangeError(`bad hold amount ${g.amount}`);
    const acct = this.figures.account(g.accountId);
    // `reserved` is what an older version left held in the database (0 once released at start-up).
    const available = acct ? acct.balance - acct.reserved - book.held(g.accountId) : 0;
    if (available < g.amount) return { ok: false, available: Math.max(0, available) };
    if (g.key) {
      const key = this.figures.key(g.key.id, g.accountId);
      if (!key) throw new InternalError(`grant of ${g.requestId}: no key ${g.key.id} for account ${g.accountId}`);
      if (key.spend_limit !== null) {
        const left = key.spend_limit - spentInPeriod(key, g.key.periods) - book.heldByKey(g.key.id);
        if (left < g.amount) return { ok: false, available: Math.max(0, left), keyLimit: key.spend_limit };
      }
    }
    book.add({ requestId: g.requestId, accountId: g.accountId, keyId: g.key?.id ?? null, amount: g.amount, createdAt: g.createdAt ?? nowSeconds() });
    return { ok: true, direct: false };
  }

  post(p: PostRequest, committed?: () => void): Promise<PostResult> {
    if (!validAmount(p.amount)) return Promise.reject(new RangeError(`bad charge amount ${p.amount}`));
    // The store's own check of the ceiling.
    if (p.amount > p.holdAmount) return Promise.reject(new InternalError(`post of ${p.requestId}: ${p.amount} exceeds its hold of ${p.holdAmount}`));
    if (p.direct) return Promise.reject(new InternalError(`post of ${p.requestId}: this store grants no direct holds`));
    const write = this.commits.submit((): PostResult => {
      const at = nowSeconds();
      // The balance and the key's spend are written once for the whole batch (charge-batch.ts).
      const balanceAfter = this.charges.debit(p.accountId, p.amount, p.requestId);
      this.figures.forgetAccount(p.accountId);
      let countedAt: number | null = null;
      if (p.keyId !== null) {
        // The charge counts in the key's period of the hold's time (by the key's limit_reset now).
        const periodStart = this.charges.countKey(p.keyId, p.amount, periodStarts(p.holdCreatedAt * 1000));
        this.figures.forgetKey(p.keyId);
        countedAt = Math.max(p.holdCreatedAt, periodStart ?? 0);
      }
      const written = this.q.insertCharge.run(
        p.accountId, -p.amount, balanceAfter, p.requestId, p.endpoint, p.model, p.serviceTier,
        p.inputTokens ?? 0, p.outputTokens ?? 0, p.characters ?? 0, p.note ?? null, at, p.keyId, countedAt ?? p.holdCreatedAt,
        p.cachedTokens ?? 0, p.cacheWriteTokens ?? 0, p.cacheSaved ?? 0,
      ).changes;
      // Charged before (an answer lost, then asked again): this write fails, which rolls back its
      // debit and key count with it (group-commit.ts), and the first charge is answered below. No
      // read per charge looks for one first: the index finds it in the insert.
      if (written === 0) throw new RepeatedCharge();
      if (p.storedResponse) this.responses.write(p.storedResponse);
      return { charged: p.amount, balanceAfter, fresh: true };
    }, "durable", committed);
    return write.catch(async (e: unknown) => {
      if (!(e instanceof RepeatedCharge)) throw e;
      // Answered once the first charge is on disk too: it may be in this very batch, not yet synced.
      await this.commits.submit(() => undefined, "durable");
      const existing = this.q.existingCharge.get(p.requestId);
      if (!existing) throw new InternalError(`post of ${p.requestId}: its charge was found in the insert but not read back`);
      committed?.();
      return { charged: -existing.amount, balanceAfter: existing.balance_after, fresh: false };
    });
  }

  adjust(accountId: string, amount: number, reason: string, book: HoldBook): Promise<{ balanceAfter: number }> {
    if (!Number.isSafeInteger(amount) || amount === 0) return Promise.reject(new RangeError(`bad adjustment ${amount}`));
    if (amount < 0 && this.besideServer) {
      return Promise.reject(invalidField("amount", "cannot be deducted here while a Switchyard server serves this data directory: it holds requests in flight in memory, so deduct through it (POST /admin/accounts/{id}/credits with a negative amount, or the dashboard), or stop it first"));
    }
    return this.commits.submit(() => {
      // Reads the balance: what the batch's charges so far took from it must be written first.
      this.charges.flush();
      this.figures.forgetAccount(accountId);
      const acct = this.q.account.get(accountId);
      if (!acct) throw notFound(`No account with id '${accountId}'.`);
      // Decided when the write runs, against what is held at that moment.
      if (amount < 0 && acct.balance - acct.reserved - book.held(accountId) + amount < 0) {
        throw invalidField("amount", "the deduction exceeds the available balance (balance minus what requests in flight hold)");
      }
      const balanceAfter = acct.balance + amount;
      if (balanceAfter > MAX_BALANCE) {
        throw invalidField("amount", `the balance may not exceed ${formatUsd(MAX_BALANCE)} USD`);
      }
      this.q.setBalance.run(balanceAfter, accountId);
      const at = nowSeconds();
      this.q.insertEntry.run(accountId, amount > 0 ? "credit" : "debit", amount, balanceAfter, null, null, null, null, 0, 0, 0, reason, at, null, at, 0, 0, 0);
      return { balanceAfter };
    });
  }

  createAccount(a: { id: string; name: string; createdAt: number }, credits: number, reason: string): Promise<void> {
    if (!Number.isSafeInteger(credits) || credits < 0) return Promise.reject(new RangeError(`bad opening credits ${credits}`));
    return this.commits.submit(() => {
      if (credits > MAX_BALANCE) {
        throw invalidField("credits", `the balance may not exceed ${formatUsd(MAX_BALANCE)} USD`);
      }
      this.figures.forgetAccount(a.id);
      this.q.insertAccount.run(a.id, a.name, a.createdAt);
      if (credits === 0) return;
      this.q.setBalance.run(credits, a.id);
      this.q.insertEntry.run(a.id, "credit", credits, credits, null, null, null, null, 0, 0, 0, reason, a.createdAt, null, a.createdAt, 0, 0, 0);
    });
  }

  /**
   * At start-up no request is in flight and no other server shares the data directory. Holds
   * live in memory now, but a database written by an earlier version may still have pending hold
   * rows and `reserved` amounts: they belong to requests that died with that process, so they are
   * voided and every reserved figure is zeroed.
   */
  releaseAbandoned(): Promise<number> {
    return this.commits.submit(() => {
      this.charges.flush();
      this.figures.forgetAll();
      const n = this.db.query("UPDATE holds SET state = 'voided', closed_at = ? WHERE state = 'pending'").run(nowSeconds()).changes;
      this.db.run("UPDATE accounts SET reserved = 0 WHERE reserved <> 0");
      this.db.run("UPDATE api_keys SET reserved = 0 WHERE reserved <> 0");
      return n;
    });
  }

  /** No holds are written here: the ledger expires its booked holds itself. */
  async expireHolds(): Promise<string[]> {
    return [];
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

  /** batches: transactions; writes: charges and credits (fsynced); holds: commit-only writes. */
  get commitStats() {
    return { batches: this.commits.batches, writes: this.commits.writes, holds: this.commits.background };
  }
}

const validAmount = (amount: number) => Number.isSafeInteger(amount) && amount >= 0;
