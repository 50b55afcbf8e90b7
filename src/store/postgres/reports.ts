/** The operator's overview sums and request log in PostgreSQL: the same SQL as the SQLite store (store/reports-sql.ts). */
import type { PgDatabase } from "./database";
import { int } from "./database";
import type { ChargeSum, RevenueRecords } from "../../billing/revenue";
import type { LogRow, RequestLogFilter, RequestLogRecords } from "../../generations/request-log";
import { chargedBySql, chargedInSql, requestLogSql, type Param } from "../reports-sql";
import { logRow, type RawLogRow } from "../sqlite/reports";

const P: Param = (n) => `$${n}`;
type Row = Record<string, unknown>;

export class PgReports implements RevenueRecords, RequestLogRecords {
  constructor(private readonly db: PgDatabase) {}

  async chargedIn(fromSeconds: number, toSeconds: number): Promise<{ requests: number; cost_units: number }> {
    const rows = (await this.db.ask((sql) => sql.unsafe(chargedInSql(P), [fromSeconds, toSeconds]))) as Row[];
    return { requests: int(rows[0]?.requests), cost_units: int(rows[0]?.cost_units) };
  }

  async chargedBy(group: "model" | "account", fromSeconds: number, toSeconds: number, limit: number | null): Promise<ChargeSum[]> {
    const params = limit === null ? [fromSeconds, toSeconds] : [fromSeconds, toSeconds, limit];
    const rows = (await this.db.ask((sql) => sql.unsafe(chargedBySql(group, limit !== null, P), params))) as Row[];
    return rows.map((r) => ({ key: (r.group_key as string | null) ?? null, requests: int(r.requests), cost_units: int(r.cost_units) }));
  }

  async requestLog(filter: RequestLogFilter): Promise<LogRow[]> {
    const { sql, params } = requestLogSql(filter, P);
    const rows = (await this.db.ask((q) => q.unsafe(sql, params))) as Row[];
    return rows.map((r) => logRow({
      ...(r as unknown as RawLogRow),
      amount: r.amount === null || r.amount === undefined ? null : int(r.amount),
    }));
  }
}
