/** The gateway's ledger read straight from its SQLite file (read-only, beside the running server). */
import { join } from "node:path";
import { Database } from "bun:sqlite";

export interface LedgerFacts {
  charges: number;
  sum: number;
  balance: number;
  pendingHolds: number;
}

export function ledgerFacts(dataDir: string, accountId: string): LedgerFacts {
  const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
  try {
    const one = (sql: string) => (db.query(sql).get(accountId) as { n: number }).n;
    return {
      charges: one("SELECT COUNT(*) AS n FROM ledger_entries WHERE account_id = ? AND kind = 'charge'"),
      sum: one("SELECT COALESCE(SUM(amount), 0) AS n FROM ledger_entries WHERE account_id = ?"),
      balance: one("SELECT balance AS n FROM accounts WHERE id = ?"),
      pendingHolds: one("SELECT COUNT(*) AS n FROM holds WHERE account_id = ? AND state = 'pending'"),
    };
  } finally {
    db.close();
  }
}
