/**
 * Reads an account's ledger state straight from the store, to check what a request left behind:
 * ledgerState() synchronously on SQLite; storeState() on either store.
 */
import type { Harness } from "./harness";

export interface LedgerState {
  balance: number;
  reserved: number;
  /** Every ledger entry of the account (credits included). */
  entries: number;
  /** Charge entries only. */
  charges: number;
  pendingHolds: number;
  sum: number;
}

export function ledgerState(h: Harness, accountId: string): LedgerState {
  const db = h.db;
  const { balance, reserved } = h.balanceUnits(accountId);
  const count = (sql: string) => (db.query(sql).get(accountId) as { n: number }).n;
  return {
    balance,
    reserved,
    entries: count("SELECT COUNT(*) AS n FROM ledger_entries WHERE account_id = ?"),
    charges: count("SELECT COUNT(*) AS n FROM ledger_entries WHERE account_id = ? AND kind = 'charge'"),
    pendingHolds: count("SELECT COUNT(*) AS n FROM holds WHERE account_id = ? AND state = 'pending'"),
    sum: h.ledgerSum(accountId),
  };
}

export async function storeState(h: Harness, accountId: string): Promise<LedgerState> {
  const [{ balance, reserved }, counts, sum] = await Promise.all([h.probe.balance(accountId), h.probe.counts(accountId), h.probe.ledgerSum(accountId)]);
  return { balance, reserved, ...counts, sum };
}

/** Waits until no hold of the account is pending (streams settle just after their last byte). */
export async function settled(h: Harness, accountId: string, timeoutMs = 2_000): Promise<LedgerState> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const s = await storeState(h, accountId);
    if ((s.pendingHolds === 0 && s.reserved === 0) || Date.now() > until) return s;
    await Bun.sleep(5);
  }
}
