/**
 * The query of GET /v1/usage (docs/operate.md, "Limits, usage and metrics"), parsed and checked: a period [start, end) and the
 * grouping. Pure, so every rule is covered by a table-driven test.
 *   start, end: ISO 8601 dates ("2026-11-01") or date-times ("2026-11-01T12:00:00Z").
 *               A date-only `end` includes that whole day. Default: the current UTC month.
 *   group_by:   comma-separated day, model, endpoint (any combination); default "day".
 */
import { invalidField } from "../errors";

export const GROUPINGS = ["day", "model", "endpoint"] as const;
export type Grouping = (typeof GROUPINGS)[number];

export interface UsageQuery {
  /** Inclusive, ms since the epoch. */
  startMs: number;
  /** Exclusive, ms since the epoch. */
  endMs: number;
  groupBy: Grouping[];
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const DAY_MS = 86_400_000;

const DATE_RULE = "must be an ISO 8601 date such as 2026-11-01, or a date-time with a zone such as 2026-11-01T12:00:00Z";

/** A calendar date that exists (no 2026-02-30), as ms at its UTC midnight. */
function utcMidnight(y: string, m: string, d: string): number | null {
  const ms = Date.UTC(Number(y), Number(m) - 1, Number(d));
  const back = new Date(ms);
  if (back.getUTCFullYear() !== Number(y) || back.getUTCMonth() !== Number(m) - 1 || back.getUTCDate() !== Number(d)) return null;
  return ms;
}

/** Parses one bound; a date-only `end` moves to the next midnight so the day is included. */
export function parseBound(param: "start" | "end", raw: string): number {
  const text = raw.trim();
  let ms: number | null = null;
  const d = DATE.exec(text);
  if (d) {
    ms = utcMidnight(d[1]!, d[2]!, d[3]!);
    if (ms !== null && param === "end") ms += DAY_MS;
  } else {
    const t = DATE_TIME.exec(text);
    if (t && utcMidnight(t[1]!, t[2]!, t[3]!) !== null && Number(t[4]) < 24 && Number(t[5]) < 60 && Number(t[6] ?? 0) < 60) {
      ms = Date.parse(text);
    }
  }
  if (ms === null || !Number.isFinite(ms)) throw invalidField(param, `${DATE_RULE}, got '${raw}'`);
  return ms;
}

export function parseGroupBy(raw: string | undefined): Grouping[] {
  if (raw === undefined) return ["day"];
  const parts = raw.split(",").map((p) => p.trim());
  const out: Grouping[] = [];
  for (const p of parts) {
    if (!(GROUPINGS as readonly string[]).includes(p)) {
      throw invalidField("group_by", `must be a comma-separated list of ${GROUPINGS.join(", ")}; '${p}' is not one of them`);
    }
    if (!out.includes(p as Grouping)) out.push(p as Grouping);
  }
  return out;
}

/** The first instant of the current UTC month and of the next one. */
export function currentMonth(nowMs: number): { startMs: number; endMs: number } {
  const now = new Date(nowMs);
  return {
    startMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
    endMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1),
  };
}

export function parseUsageQuery(query: Record<string, string | undefined>, nowMs: number = Date.now()): UsageQuery {
  const groupBy = parseGroupBy(query.group_by);
  const month = currentMonth(nowMs);
  const startMs = query.start !== undefined ? parseBound("start", query.start) : month.startMs;
  let endMs: number;
  if (query.end !== undefined) endMs = parseBound("end", query.end);
  else endMs = query.start !== undefined ? Math.max(month.endMs, startMs) : month.endMs;
  // An empty period is a mistake too: the exclusive end must lie after the start.
  if (endMs <= startMs) throw invalidField("end", "must not be before start (a date-only end includes its whole day)");
  return { startMs, endMs, groupBy };
}
