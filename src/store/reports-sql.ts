/**
 * The SQL of the operator's overview and request log, for both stores (only how parameters are
 * written differs). Only fixed column names reach the text; every value is a parameter.
 */
import { requestIdAt, type RequestLogFilter } from "../generations/request-log";

export type Param = (n: number) => string;

/** Parameters: from (inclusive), to (exclusive), unix seconds. Uses the index on charges by time. */
export const chargedInSql = (p: Param) => `SELECT COUNT(*) AS requests, COALESCE(-SUM(amount), 0) AS cost_units
  FROM ledger_entries WHERE kind = 'charge' AND created_at >= ${p(1)} AND created_at < ${p(2)}`;

/** Parameters: from, to, and (with a limit) the limit. */
export function chargedBySql(group: "model" | "account", limited: boolean, p: Param): string {
  const column = group === "model" ? "model" : "account_id";
  return `SELECT ${column} AS group_key, COUNT(*) AS requests, COALESCE(-SUM(amount), 0) AS cost_units
  FROM ledger_entries WHERE kind = 'charge' AND created_at >= ${p(1)} AND created_at < ${p(2)}
  GROUP BY ${column} ORDER BY cost_units DESC, group_key${limited ? ` LIMIT ${p(3)}` : ""}`;
}

export const LOG_COLUMNS = `o.request_id, o.account_id, o.key_id, o.endpoint, o.model, o.http_status, o.outcome, o.streamed, o.duration_ms,
  l.amount, l.input_tokens, l.output_tokens, l.cached_tokens, l.cache_write_tokens, l.cache_saved, l.characters`;

/** The request log's query and its parameters, in order. */
export function requestLogSql(f: RequestLogFilter, p: Param): { sql: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const add = (cond: (ref: string) => string, value: string | number) => {
    params.push(value);
    where.push(cond(p(params.length)));
  };
  if (f.accountId !== undefined) add((x) => `o.account_id = ${x}`, f.accountId);
  if (f.keyId !== undefined) add((x) => `o.key_id = ${x}`, f.keyId);
  if (f.model !== undefined) add((x) => `o.model = ${x}`, f.model);
  if (typeof f.status === "number") add((x) => `o.http_status = ${x}`, f.status);
  else if (f.status === "failed") where.push("(o.http_status >= 400 OR o.outcome = 'failed')");
  else if (f.status === "cancelled") where.push("(o.http_status < 400 AND o.outcome = 'cancelled')");
  else if (f.status === "completed") where.push("(o.http_status < 400 AND o.outcome NOT IN ('failed', 'cancelled'))");
  // Request ids sort by arrival time: a time range is a range of the primary key.
  if (f.fromMs !== undefined) add((x) => `o.request_id >= ${x}`, requestIdAt(f.fromMs));
  if (f.toMs !== undefined) add((x) => `o.request_id < ${x}`, requestIdAt(f.toMs));
  if (f.before !== undefined) add((x) => `o.request_id < ${x}`, f.before);
  params.push(f.limit);
  const sql = `SELECT ${LOG_COLUMNS}
  FROM request_outcomes o LEFT JOIN ledger_entries l ON l.request_id = o.request_id AND l.kind = 'charge'
  ${where.length ? "WHERE " + where.join(" AND ") : ""}
  ORDER BY o.request_id DESC LIMIT ${p(params.length)}`;
  return { sql, params };
}
