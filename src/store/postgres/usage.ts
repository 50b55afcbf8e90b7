/**
 * Usage sums and charge lookups over the ledger in PostgreSQL: the same figures as
 * store/sqlite/usage.ts (days are UTC dates of the entries' unix-second times).
 */
import type { PgDatabase } from "./database";
import { int } from "./database";
import type { SumRow, UsageRecords } from "../../billing/usage-report";
import type { Grouping } from "../../billing/usage-query";
import type { ChargeRecords, ChargeRow } from "../../generations/records";
import { CHARGE_COLUMNS, usageSumsSql, type UsageDialect } from "../usage-sql";

type Row = Record<string, unknown>;

const POSTGRES: UsageDialect = { day: "to_char(to_timestamp(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')", param: (n) => `$${n}` };

function charge(r: Row): ChargeRow {
  return {
    request_id: r.request_id as string,
    endpoint: (r.endpoint as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    service_tier: (r.service_tier as string | null) ?? null,
    amount: int(r.amount),
    input_tokens: int(r.input_tokens),
    output_tokens: int(r.output_tokens),
    cached_tokens: int(r.cached_tokens),
    cache_write_tokens: int(r.cache_write_tokens),
    cache_saved: int(r.cache_saved),
    characters: int(r.characters),
    reason: (r.reason as string | null) ?? null,
    created_at: int(r.created_at),
  };
}

export class PgUsageRecords implements UsageRecords, ChargeRecords {
  constructor(private readonly db: PgDatabase) {}

  async balance(accountId: string): Promise<{ balance: number; reserved: number } | null> {
    const rows = (await this.db.ask((sql) => sql`SELECT balance, reserved + leased AS reserved FROM accounts WHERE id = ${accountId}`)) as Row[];
    return rows[0] ? { balance: int(rows[0].balance), reserved: int(rows[0].reserved) } : null;
  }

  async sums(accountId: string, fromSeconds: number, toSeconds: number, groupBy: Grouping[]): Promise<SumRow[]> {
    const rows = (await this.db.ask((sql) => sql.unsafe(usageSumsSql(groupBy, POSTGRES), [accountId, fromSeconds, toSeconds]))) as Row[];
    return rows.map((r) => ({
      ...(r.day !== undefined ? { day: r.day as string } : {}),
      ...(r.model !== undefined ? { model: (r.model as string | null) ?? null } : {}),
      ...(r.endpoint !== undefined ? { endpoint: (r.endpoint as string | null) ?? null } : {}),
      requests: int(r.requests),
      input_tokens: int(r.input_tokens),
      output_tokens: int(r.output_tokens),
      cached_input_tokens: int(r.cached_input_tokens),
      cache_write_tokens: int(r.cache_write_tokens),
      characters: int(r.characters),
      cost_units: int(r.cost_units),
    }));
  }

  async credited(accountId: string): Promise<number> {
    const rows = (await this.db.ask((sql) => sql`
      SELECT COALESCE(SUM(amount), 0) AS units FROM ledger_entries WHERE account_id = ${accountId} AND kind IN ('credit', 'debit')`)) as Row[];
    return int(rows[0]?.units);
  }

  async charge(requestId: string, accountId: string): Promise<ChargeRow | null> {
    const rows = (await this.db.ask((sql) => sql.unsafe(
      `SELECT ${CHARGE_COLUMNS} FROM ledger_entries WHERE request_id = $1 AND kind = 'charge' AND account_id = $2`, [requestId, accountId]))) as Row[];
    return rows[0] ? charge(rows[0]) : null;
  }

  async recent(accountId: string, limit: number): Promise<ChargeRow[]> {
    const rows = (await this.db.ask((sql) => sql.unsafe(
      `SELECT ${CHARGE_COLUMNS} FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' ORDER BY created_at DESC, id DESC LIMIT $2`, [accountId, limit]))) as Row[];
    return rows.map(charge);
  }
}
