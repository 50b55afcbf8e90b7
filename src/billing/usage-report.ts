/**
 * The usage report of GET /v1/usage: the account's charge entries in a period, summed per group.
 * Everything is computed from the immutable ledger, so rows and totals are exactly the sum of
 * its entries (integer units; converted to USD only for the JSON).
 */
import type { Store } from "../store/database";
import { usdNumber } from "./money";
import type { Grouping, UsageQuery } from "./usage-query";

interface SumRow {
  day?: string;
  model?: string | null;
  endpoint?: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  characters: number;
  cost_units: number;
}

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

function figures(r: SumRow) {
  return {
    requests: r.requests,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    characters: r.characters,
    cost: usdNumber(r.cost_units),
  };
}

export function usageReport(db: Store, accountId: string, q: UsageQuery) {
  // Ledger times are whole seconds: [start, end) in ms maps to [ceil(start), ceil(end)) seconds.
  const from = Math.ceil(q.startMs / 1000);
  const to = Math.ceil(q.endMs / 1000);
  const acct = db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?").get(accountId);
  const total = db.query<SumRow, [string, number, number]>(sumsSql([])).get(accountId, from, to)!;
  const rows = q.groupBy.length ? db.query<SumRow, [string, number, number]>(sumsSql(q.groupBy)).all(accountId, from, to) : [];
  const balance = acct?.balance ?? 0;
  const reserved = acct?.reserved ?? 0;
  return {
    object: "usage",
    currency: "USD",
    start: new Date(q.startMs).toISOString(),
    end: new Date(q.endMs).toISOString(),
    group_by: q.groupBy,
    balance: { total: usdNumber(balance), available: usdNumber(balance - reserved), reserved: usdNumber(reserved) },
    totals: figures(total),
    rows: rows.map((r) => ({
      ...(q.groupBy.includes("day") ? { day: r.day } : {}),
      ...(q.groupBy.includes("model") ? { model: r.model ?? null } : {}),
      ...(q.groupBy.includes("endpoint") ? { endpoint: r.endpoint ?? null } : {}),
      ...figures(r),
    })),
  };
}
