/**
 * The balance and key spend changes of one group-commit batch (group-commit.ts), kept in memory
 * while its charges run and written once per account and once per key just before the batch
 * commits. At gateway rates a batch holds tens of charges of the same few accounts, and each
 * charge's own UPDATE of its account and of its key cost more than its ledger entry's insert.
 *
 * Everything here happens inside the batch's write transaction: an account's balance and a key's
 * figures are read from the database the first time a charge of the batch touches them, every
 * later charge counts on the running figures, and `flush` writes the final ones. So each entry's
 * `balance_after` is exactly what a statement per charge would have given, and the database's
 * CHECK on the balance still guards the one write. The rules are the same as before:
 *   - a debit never takes a balance below zero (refused here, as the CHECK would);
 *   - a charge counts in its key's period of the hold's time; a newer period starts over at the
 *     charge, an older or the same one counts against the stored one, which never moves backwards
 *     (billing/key-periods.ts).
 * When the transaction or a write's savepoint rolls back, `discard` forgets what was not written.
 */
import type { Store } from "../database";
import type { BatchState } from "./group-commit";
import { periodOf, type KeySpend, type PeriodStarts } from "../../billing/key-periods";
import { InternalError } from "../../errors";

/** A key's stored spend figures and its spend in all. */
type KeyCounters = KeySpend & { spent: number };

export class ChargeBatch implements BatchState {
  private readonly balances = new Map<string, number>();
  private readonly keys = new Map<string, KeyCounters>();
  private readonly q;

  constructor(db: Store) {
    this.q = {
      balance: db.query<{ balance: number }, [string]>("SELECT balance FROM accounts WHERE id = ?"),
      key: db.query<KeyCounters, [string]>("SELECT limit_reset, spent, period_start, period_spent FROM api_keys WHERE id = ?"),
      setBalance: db.query<never, [number, string]>("UPDATE accounts SET balance = ? WHERE id = ?"),
      setKey: db.query<never, [number, number, number, string]>("UPDATE api_keys SET spent = ?, period_start = ?, period_spent = ? WHERE id = ?"),
    };
  }

  /** Lowers the account's running balance by `amount` and returns it; throws when there is no account or it would go negative. */
  debit(accountId: string, amount: number, requestId: string): number {
    let balance = this.balances.get(accountId);
    if (balance === undefined) {
      const row = this.q.balance.get(accountId);
      if (!row) throw new InternalError(`post of ${requestId}: no account ${accountId}`);
      balance = row.balance;
    }
    const after = balance - amount;
    if (after < 0) throw new InternalError(`post of ${requestId}: ${amount} exceeds the balance of ${balance}`);
    this.balances.set(accountId, after);
    return after;
  }

  /**
   * Counts `amount` in the key's period of `periods` (the starts at the hold's time) and returns
   * the key's stored period start after it; null when there is no such key (nothing is counted).
   */
  countKey(keyId: string, amount: number, periods: PeriodStarts): number | null {
    let k = this.keys.get(keyId);
    if (k === undefined) {
      const row = this.q.key.get(keyId);
      if (!row) return null;
      k = { ...row };
      this.keys.set(keyId, k);
    }
    const start = periodOf(k.limit_reset, periods);
    k.spent += amount;
    k.period_spent = start > k.period_start ? amount : k.period_spent + amount;
    k.period_start = Math.max(k.period_start, start);
    return k.period_start;
  }

  flush(): void {
    for (const [id, balance] of this.balances) this.q.setBalance.run(balance, id);
    for (const [id, k] of this.keys) this.q.setKey.run(k.spent, k.period_start, k.period_spent, id);
    this.discard();
  }

  discard(): void {
    this.balances.clear();
    this.keys.clear();
  }
}
