/**
 * The periods a key's spend limit resets on (README, "Keys: limits, expiry, models"): UTC
 * calendar periods — a day from 00:00 UTC, a week from Monday 00:00 UTC (ISO 8601 weeks), a
 * month from the 1st 00:00 UTC. Times are Unix seconds. A limit without a reset period belongs
 * to one period that never ends (start 0).
 */

export const LIMIT_RESETS = ["daily", "weekly", "monthly"] as const;
export type LimitReset = (typeof LIMIT_RESETS)[number];

/** The starts of the current day, week and month at `ms` (milliseconds since the epoch). */
export interface PeriodStarts {
  day: number;
  week: number;
  month: number;
}

const DAY = 86_400;

export function periodStarts(ms: number): PeriodStarts {
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) / 1000;
  // getUTCDay(): 0 = Sunday; ISO weeks start on Monday.
  const week = day - ((d.getUTCDay() + 6) % 7) * DAY;
  const month = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  return { day, week, month };
}

/** The start of the period `reset` is in at `ms`; 0 for a limit that never resets. */
export function periodStart(reset: LimitReset | null, ms: number): number {
  if (reset === null) return 0;
  const p = periodStarts(ms);
  return reset === "daily" ? p.day : reset === "weekly" ? p.week : p.month;
}

/** When the period that `reset` is in at `ms` ends (Unix seconds); null when it never does. */
export function nextReset(reset: LimitReset | null, ms: number): number | null {
  if (reset === null) return null;
  const start = periodStart(reset, ms);
  if (reset === "daily") return start + DAY;
  if (reset === "weekly") return start + 7 * DAY;
  const d = new Date(start * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
}
