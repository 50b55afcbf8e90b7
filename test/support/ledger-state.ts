/**
 * Reads an account's ledger state straight from the store, to check what a request left behind:
 * ledgerState() synchronously on SQLite; storeState() on either store.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
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
    pendingHolds: count("SELECT COUNT(*) AS n FROM holds WHERE account_id = ? AND state = 'pending'") + h.server.services.ledger.book.openFor(accountId),
    sum: h.ledgerSum(accountId),
  };
}

export async function storeState(h: Harness, accountId: string): Promise<LedgerState> {
  const [{ balance, reserved }, counts, sum] = await Promise.all([h.probe.balance(accountId), h.probe.counts(accountId), h.probe.ledgerSum(accountId)]);
  return { balance, reserved, ...counts, sum };
}

/**
 * Waits until no hold of the account is pending (streams settle just after their last byte), and —
 * on PostgreSQL — until the charges the server journaled are shipped to the database.
 */
export async function settled(h: Harness, accountId: string, timeoutMs = 10_000): Promise<LedgerState> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const s = await storeState(h, accountId);
    if ((s.pendingHolds === 0 && s.reserved === 0) || Date.now() > until) {
      // The last hold went with its charge's journal commit: that charge may not be shipped yet.
      if (!(await shipped(h, timeoutMs))) return s;
      return storeState(h, accountId);
    }
    await Bun.sleep(5);
  }
}

/**
 * An account's ledger as a server process left it in its data directory's database (stopped or
 * running: WAL readers do not block): balance and reserved, its charges, Σ entries, pending holds.
 */
export function ledgerOnDisk(dataDir: string, accountId: string) {
  const db = new Database(join(dataDir, "switchyard.db"));
  try {
    const acct = db.query("SELECT balance, reserved FROM accounts WHERE id = ?").get(accountId) as { balance: number; reserved: number };
    const charges = db.query("SELECT request_id, amount FROM ledger_entries WHERE account_id = ? AND kind = 'charge'").all(accountId) as { request_id: string; amount: number }[];
    const sum = (db.query("SELECT SUM(amount) AS s FROM ledger_entries WHERE account_id = ?").get(accountId) as { s: number }).s;
    const pending = (db.query("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending'").get() as { n: number }).n;
    return { ...acct, charges, sum, pending };
  } finally {
    db.close();
  }
}

/** On PostgreSQL: waits until the server's charge journal has shipped what it holds (a no-op on SQLite). */
export async function shipped(h: Harness, timeoutMs = 10_000): Promise<boolean> {
  const store = h.server.services.store as { engine: string; ledger: { journal?: { drain(ms: number): Promise<boolean> } | null } };
  if (store.engine !== "postgres" || !store.ledger.journal) return false;
  await store.ledger.journal.drain(timeoutMs);
  return true;
}
