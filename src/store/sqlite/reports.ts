/** The operator's overview sums and request log over the embedded SQLite database (store/reports-sql.ts). */
import type { Store } from "../database";
import type { ChargeSum, RevenueRecords } from "../../billing/revenue";
import type { LogRow, RequestLogFilter, RequestLogRecords } from "../../generations/request-log";
import { chargedBySql, chargedInSql, requestLogSql, type Param } from "../reports-sql";

const P: Param = (n) => `?${n}`;

interface RawLogRow {
  request_id: string;
  account_id: string;
  key_id: string | null;
  endpoint: string;
  model: string;
  http_status: number;
  outcome: string;
  streamed: number;
  duration_ms: number;
  amount: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  cache_write_tokens: number | null;
  cache_saved: number | null;
  characters: number | null;
}

export function logRow(r: RawLogRow): LogRow {
  return {
    request_id: r.request_id, account_id: r.account_id, key_id: r.key_id ?? null, endpoint: r.endpoint, model: r.model,
    http_status: Number(r.http_status), outcome: r.outcome, streamed: Number(r.streamed) === 1, duration_ms: Number(r.duration_ms),
    cost_units: r.amount === null ? 0 : -Number(r.amount), billed: r.amount !== null,
    input_tokens: Number(r.input_tokens ?? 0), output_tokens: Number(r.output_tokens ?? 0), characters: Number(r.characters ?? 0),
    cached_tokens: Number(r.cached_tokens ?? 0), cache_write_tokens: Number(r.cache_write_tokens ?? 0), cache_saved_units: Number(r.cache_saved ?? 0),
  };
}

export type { RawLogRow };

export class SqliteReports implements RevenueRecords, RequestLogRecords {
  constructor(private readonly db: Store) {}

  async chargedIn(fromSeconds: number, toSeconds: number): Promise<{ requests: number; cost_units: number }> {
    return this.db.query<{ requests: number; cost_units: number }, [number, number]>(chargedInSql(P)).get(fromSeconds, toSeconds)!;
  }

  async chargedBy(group: "model" | "account", fromSeconds: number, toSeconds: number, limit: number | null): Promise<ChargeSum[]> {
    const q = this.db.query<{ group_key: string | null; requests: number; cost_units: number }, (string | number)[]>(chargedBySql(group, limit !== null, P));
    const rows = limit === null ? q.all(fromSeconds, toSeconds) : q.all(fromSeconds, toSeconds, limit);
    return rows.map((r) => ({ key: r.group_key, requests: r.requests, cost_units: r.cost_units }));
  }

  async requestLog(filter: RequestLogFilter): Promise<LogRow[]> {
    const { sql, params } = requestLogSql(filter, P);
    return this.db.query<RawLogRow, (string | number)[]>(sql).all(...params).map(logRow);
  }
}
