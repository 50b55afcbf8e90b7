/** Usage sums and charge lookups over the ledger in the embedded SQLite database. */
import type { Store } from "../database";
import type { SumRow, UsageRecords } from "../../billing/usage-report";
import type { Grouping } from "../../billing/usage-query";
import type { ChargeRecords, ChargeRow } from "../../generations/records";
import { CHARGE_COLUMNS, usageSumsSql, type UsageDialect } from "../usage-sql";

const SQLITE: UsageDialect = { day: "strftime('%Y-%m-%d', created_at, 'unixepoch')", param: (n) => `?${n}` };

export class SqliteUsageRecords implements UsageRecords, ChargeRecords {
  private readonly q;

  constructor(private readonly db: Store) {
    this.q = {
      balance: db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?"),
      credited: db.query<{ units: number }, [string]>(
        "SELECT COALESCE(SUM(amount), 0) AS units FROM ledger_entries WHERE account_id = ? AND kind IN ('credit', 'debit')",
      ),
      // kind = 'charge' lets SQLite use the unique partial index on request_id.
      charge: db.query<ChargeRow, [string, string]>(
        `SELECT ${CHARGE_COLUMNS} FROM ledger_entries WHERE request_id = ? AND kind = 'charge' AND account_id = ?`,
      ),
      recent: db.query<ChargeRow, [string, number]>(
        `SELECT ${CHARGE_COLUMNS} FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY created_at DESC, id DESC LIMIT ?`,
      ),
    };
  }

  async balance(accountId: string): Promise<{ balance: number; reserved: number } | null> {
    return this.q.balance.get(accountId);
  }

  async sums(accountId: string, fromSeconds: number, toSeconds: number, groupBy: Grouping[]): Promise<SumRow[]> {
    return this.db.query<SumRow, [string, number, number]>(usageSumsSql(groupBy, SQLITE)).all(accountId, fromSeconds, toSeconds);
  }

  async credited(accountId: string): Promise<number> {
    return this.q.credited.get(accountId)!.units;
  }

  async charge(requestId: string, accountId: string): Promise<ChargeRow | null> {
    return this.q.charge.get(requestId, accountId);
  }

  async recent(accountId: string, limit: number): Promise<ChargeRow[]> {
    return this.q.recent.all(accountId, limit);
  }
}
