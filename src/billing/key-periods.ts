/**
 * The periods a key's spend limit resets on (docs/operate.md, "Keys: limits, expiry, models"): UTC
 * calendar periods — a day from 00:00 UTC, a week from Monday 00:00 UTC (ISO 8601 weeks), a
 * month from the 1st 00:00 UTC. Times are Unix seconds. A limit without a reset period belongs
 * to one period that never ends (start 0).
 *
 * One clock for spend periods: a key stores the start of the period its spend belongs to
 * (`period_start`) and that spend (`period_spent`). A charge counts in the period of its hold's
 * time; when that period is newer than the stored one it starts it, otherwise — the same period,
 * or an older one from an instance whose clock is behind — it counts against the stored one. So
 * the stored period never moves backwards, and instances with clocks seconds apart around midnight
 * cannot reset each other's spend. A hold is checked the same way: the stored spend counts unless
 * this instance's current period is newer. Changing a key's limit_reset keeps what was spent in
 * the new current period (recomputed from its charges), so no change of period gives a fresh
 * allowance.
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

/** A key's stored spend figures. */
export interface KeySpend {
  limit_reset: LimitReset | null;
  period_start: number;
  period_spent: number;
}

/** The start of the period `reset` picks from the current starts `p`; 0 for a limit that never resets. */
export function periodOf(reset: LimitReset | null, p: PeriodStarts): number {
  return reset === "daily" ? p.day : reset === "weekly" ? p.week : reset === "monthly" ? p.month : 0;
}

/**
 * What counts against the key's limit now (current starts `p`): the stored spend, unless the
 * current period is newer than the stored one (it then starts at 0). A stored period newer than
 * this clock's (another instance is ahead) still counts: it never moves backwards.
 */
export function spentInPeriod(k: KeySpend, p: PeriodStarts): number {
  return periodOf(k.limit_reset, p) > k.period_start ? 0 : k.period_spent;
}
