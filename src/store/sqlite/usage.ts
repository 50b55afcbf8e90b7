/** Usage sums and charge lookups over the ledger in the embedded SQLite database. */
import type { Store } from "../database";
import type { SumRow, UsageRecords } from "../../billing/usage-report";
import type { Grouping } from "../../billing/usage-query";
import type { ChargeRecords, ChargeRow } from "../../generations/records";

const COLUMN: Record<Grouping, string> = {
  day: "strftime('%Y-%m-%d', created_at, 'unixepoch') AS day",
  model: "model",
  endpoint: "endpoint",
};

function sumsSql(groupBy: Grouping[]): string {
  const cols = groupBy.map((g) => COLUMN[g] + ",").join(" ");
  const group = groupBy.length ? `GROUP BY ${groupBy.join(", ")} ORDER BY ${groupBy.join(", ")}` : "";
  return `SELECT ${cols} COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0) AS input_tokens,
      COALESCE(SUM(output_tokens), 0) AS output_tokens, COALESCE(SUM(characters), 0) AS characters,
      COALESCE(-SUM(amount), 0) AS cost_units
    FROM ledger_entries
    WHERE account_id = ?1 AND kind = 'charge' AND created_at >= ?2 AND created_at < ?3
    ${group}`;
}

const CHARGE_COLUMNS = "request_id, endpoint, model, service_tier, amount, input_tokens, output_tokens, characters, reason, created_at";

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
    return this.db.query<SumRow, [string, number, number]>(sumsSql(groupBy)).all(accountId, fromSeconds, toSeconds);
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
