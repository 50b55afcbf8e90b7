/**
 * The SQL of a usage report, for both stores: the same sums over an account's charges in a time
 * range, grouped by day, model and/or endpoint. Only the dialect differs — how a unix-second time
 * becomes a UTC date, and how parameters are written — so each store passes its own.
 */
import type { Grouping } from "../billing/usage-query";

export interface UsageDialect {
  /** An expression for the UTC date (YYYY-MM-DD) of `created_at`, a unix-second time. */
  day: string;
  /** The n-th parameter (1-based). */
  param(n: number): string;
}

/** Charge columns a report or a lookup returns, in this order. */
export const CHARGE_COLUMNS =
  "request_id, endpoint, model, service_tier, amount, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved, characters, reason, created_at";

/**
 * Parameters: account id, from (inclusive) and to (exclusive), in unix seconds. Only fixed column
 * names from GROUPINGS reach the text; values are parameters.
 */
export function usageSumsSql(groupBy: Grouping[], dialect: UsageDialect): string {
  const column: Record<Grouping, string> = { day: `${dialect.day} AS day`, model: "model", endpoint: "endpoint" };
  const cols = groupBy.map((g) => column[g] + ",").join(" ");
  const group = groupBy.length ? `GROUP BY ${groupBy.join(", ")} ORDER BY ${groupBy.join(", ")}` : "";
  const [account, from, to] = [1, 2, 3].map(dialect.param);
  return `SELECT ${cols} COUNT(*) AS requests, COALESCE(SUM(input_tokens), 0) AS input_tokens,
      COALESCE(SUM(output_tokens), 0) AS output_tokens, COALESCE(SUM(cached_tokens), 0) AS cached_input_tokens,
      COALESCE(SUM(cache_write_tokens), 0) AS cache_write_tokens, COALESCE(SUM(characters), 0) AS characters,
      COALESCE(-SUM(amount), 0) AS cost_units
    FROM ledger_entries
    WHERE account_id = ${account} AND kind = 'charge' AND created_at >= ${from} AND created_at < ${to}
    ${group}`;
}
