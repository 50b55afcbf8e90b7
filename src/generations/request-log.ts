/**
 * The operator's request log (docs/dashboard.md): every recorded request across accounts, newest
 * first, filtered by account, key, model, status and time, paged by a cursor (the last request id
 * of the previous page: ids sort by arrival), and exported as CSV. A row is the request's outcome
 * joined with its charge entry (no charge: cost 0). Money stays integer units until shown.
 */
import { invalidField } from "../errors";
import { formatUsd, usdNumber } from "../billing/money";
import { arrivalOfRequestId } from "./outcomes";

export type LogStatus = "completed" | "cancelled" | "failed";

export interface RequestLogFilter {
  accountId?: string;
  keyId?: string;
  model?: string;
  /** A generation-record status, or one HTTP status code. */
  status?: LogStatus | number;
  /** Arrival time range in ms: from inclusive, to exclusive. */
  fromMs?: number;
  toMs?: number;
  /** Only requests older than this request id (the previous page's last). */
  before?: string;
  limit: number;
}

export interface LogRow {
  request_id: string;
  account_id: string;
  key_id: string | null;
  endpoint: string;
  model: string;
  http_status: number;
  outcome: string;
  streamed: boolean;
  duration_ms: number;
  /** Charged units (positive), 0 when unbilled. */
  cost_units: number;
  billed: boolean;
  input_tokens: number;
  output_tokens: number;
  characters: number;
  /** Of input_tokens, read from and written to the upstream's prompt cache. */
  cached_tokens: number;
  cache_write_tokens: number;
  /** Units the prompt cache took off the cost (negative when writes cost more than reads saved). */
  cache_saved_units: number;
}

export interface RequestLogRecords {
  /** Rows matching the filter, newest first, at most filter.limit. */
  requestLog(filter: RequestLogFilter): Promise<LogRow[]>;
}

export const LOG_PAGE_DEFAULT = 50;
export const LOG_PAGE_MAX = 500;
const ID = /^req_[0-9a-z]{9}[A-Za-z0-9_-]{0,40}$/;
const STATUSES: LogStatus[] = ["completed", "cancelled", "failed"];

/** The smallest request id that arrived at or after `ms` (ids are "req_" + 9 base-36 digits of ms + random). */
export function requestIdAt(ms: number): string {
  return `req_${Math.max(0, Math.floor(ms)).toString(36).padStart(9, "0")}`;
}

/** An ISO 8601 date or date-time; a time without a zone is UTC (never the server's local zone). */
const ISO = /^\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d{1,3})?)?(Z|[+-]\d\d:\d\d)?)?$/;

function time(name: string, raw: string): number {
  const iso = ISO.exec(raw);
  const ms = /^\d{1,15}$/.test(raw) ? Number(raw) : iso ? Date.parse(iso[1] === undefined && raw.includes("T") ? raw + "Z" : raw) : NaN;
  if (!Number.isFinite(ms) || ms < 0) throw invalidField(name, "must be an ISO 8601 date or time in UTC (2026-11-27, 2026-11-27T10:00:00Z) or milliseconds since 1970");
  return ms;
}

function text(name: string, raw: string): string {
  if (raw.length > 256) throw invalidField(name, "must be at most 256 characters");
  return raw;
}

/** The filter from a query string (?account=&key=&model=&status=&from=&to=&cursor=&limit=); 400 naming the field otherwise. */
export function parseLogQuery(q: URLSearchParams, maxLimit = LOG_PAGE_MAX): RequestLogFilter {
  const f: RequestLogFilter = { limit: LOG_PAGE_DEFAULT };
  const get = (n: string) => {
    const v = q.get(n);
    return v === null || v.trim() === "" ? null : v.trim();
  };
  const account = get("account");
  if (account) f.accountId = text("account", account);
  const key = get("key");
  if (key) f.keyId = text("key", key);
  const model = get("model");
  if (model) f.model = text("model", model);
  const status = get("status");
  if (status) {
    if (/^[1-5]\d\d$/.test(status)) f.status = Number(status);
    else if ((STATUSES as string[]).includes(status)) f.status = status as LogStatus;
    else throw invalidField("status", "must be completed, cancelled, failed or an HTTP status code such as 429");
  }
  const from = get("from");
  if (from) f.fromMs = time("from", from);
  const to = get("to");
  if (to) f.toMs = time("to", to);
  if (f.fromMs !== undefined && f.toMs !== undefined && f.toMs <= f.fromMs) throw invalidField("to", "must be later than 'from'");
  const cursor = get("cursor");
  if (cursor) {
    if (!ID.test(cursor)) throw invalidField("cursor", "must be a request id from the previous page's next_cursor");
    f.before = cursor;
  }
  const limit = get("limit");
  if (limit) {
    if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > maxLimit) throw invalidField("limit", `must be a whole number from 1 to ${maxLimit}`);
    f.limit = Number(limit);
  }
  return f;
}

/** The generation-record status of a row (as GET /v1/generation says it). */
export function statusOfRow(r: LogRow): LogStatus {
  if (r.http_status >= 400 || r.outcome === "failed") return "failed";
  return r.outcome === "cancelled" ? "cancelled" : "completed";
}

function createdAt(r: LogRow): string {
  const ms = arrivalOfRequestId(r.request_id);
  return ms === null ? "" : new Date(ms).toISOString();
}

/** A row as the dashboard's JSON shows it (money as an exact decimal number). */
export function logRowView(r: LogRow) {
  return {
    id: r.request_id,
    created_at: createdAt(r),
    account_id: r.account_id,
    key_id: r.key_id,
    model: r.model,
    endpoint: r.endpoint,
    status: statusOfRow(r),
    http_status: r.http_status,
    streamed: r.streamed,
    latency: r.duration_ms,
    tokens_prompt: r.input_tokens,
    tokens_completion: r.output_tokens,
    tokens_cached: r.cached_tokens,
    tokens_cache_write: r.cache_write_tokens,
    characters: r.characters,
    total_cost: usdNumber(r.cost_units),
    cache_saved: usdNumber(r.cache_saved_units),
    billed: r.billed,
  };
}

/** The columns of the first version stay where they were; the cache's come after them. */
export const CSV_HEADER =
  "request_id,created_at,account_id,key_id,model,endpoint,status,http_status,streamed,latency_ms,tokens_prompt,tokens_completion,characters,cost_usd,tokens_cached,tokens_cache_write,cache_saved_usd\r\n";

/**
 * One CSV field (RFC 4180 quoting; a leading =,+,-,@ is prefixed with ' so spreadsheets do not run
 * it). A plain number is no formula: a negative cache saving stays a number.
 */
function field(v: string): string {
  const safe = /^[=+\-@]/.test(v) && !/^-\d+(\.\d+)?$/.test(v) ? "'" + v : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** One CSV line; cost is the exact decimal of the charged units ("0.000123"), never a float. */
export function csvLine(r: LogRow): string {
  const cells = [
    r.request_id, createdAt(r), r.account_id, r.key_id ?? "", r.model, r.endpoint, statusOfRow(r), String(r.http_status),
    r.streamed ? "true" : "false", String(r.duration_ms), String(r.input_tokens), String(r.output_tokens), String(r.characters),
    formatUsd(r.cost_units), String(r.cached_tokens), String(r.cache_write_tokens), formatUsd(r.cache_saved_units),
  ];
  return cells.map(field).join(",") + "\r\n";
}

/** Every matching row as CSV, read a page at a time (no limit: the filter's limit is the page size). */
export function csvStream(records: RequestLogRecords, filter: RequestLogFilter): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let before = filter.before;
  let started = false;
  let done = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(enc.encode(CSV_HEADER));
        return;
      }
      if (done) return controller.close();
      const rows = await records.requestLog({ ...filter, before });
      if (rows.length < filter.limit) done = true;
      if (rows.length === 0) return controller.close();
      before = rows[rows.length - 1]!.request_id;
      controller.enqueue(enc.encode(rows.map(csvLine).join("")));
    },
  });
}
