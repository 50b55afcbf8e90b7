/**
 * An account's money at a glance, for the self-service endpoints (GET /v1/key, /v1/credits) and
 * the dashboard: what the operator credited, what was spent (all time and in the current UTC day,
 * week and month) and the balance. Spend comes from usageReport, so every figure is the same
 * sum of ledger charge entries that GET /v1/usage reports for that period.
 */
import type { Store } from "../store/database";
import { usdNumber } from "./money";
import { currentMonth } from "./usage-query";
import { usageReport } from "./usage-report";

const DAY_MS = 86_400_000;
/** Far enough ahead to include every charge, near enough to stay a valid date. */
const END_OF_TIME_MS = Date.UTC(9999, 0, 1);

export interface SpendPeriods {
  /** All time. */
  total: number;
  /** The current UTC day, week (from Monday 00:00) and calendar month, in USD. */
  day: number;
  week: number;
  month: number;
}

export interface AccountMoney {
  /** Net credits the operator added (credits minus deductions), all time, in USD. */
  credited: number;
  /** The balance, what requests in flight hold, and the difference, in USD. */
  balance: number;
  reserved: number;
  available: number;
  spend: SpendPeriods;
}

/** The UTC midnights that open the current day and ISO week (weeks start on Monday). */
export function currentDayAndWeek(nowMs: number): { dayStartMs: number; weekStartMs: number } {
  const dayStartMs = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const sinceMonday = (new Date(dayStartMs).getUTCDay() + 6) % 7;
  return { dayStartMs, weekStartMs: dayStartMs - sinceMonday * DAY_MS };
}

function spent(db: Store, accountId: string, startMs: number, endMs: number): number {
  return usageReport(db, accountId, { startMs, endMs, groupBy: [] }).totals.cost;
}

export function spendPeriods(db: Store, accountId: string, nowMs: number = Date.now()): SpendPeriods {
  const { dayStartMs, weekStartMs } = currentDayAndWeek(nowMs);
  const month = currentMonth(nowMs);
  return {
    total: spent(db, accountId, 0, END_OF_TIME_MS),
    day: spent(db, accountId, dayStartMs, dayStartMs + DAY_MS),
    week: spent(db, accountId, weekStartMs, weekStartMs + 7 * DAY_MS),
    month: spent(db, accountId, month.startMs, month.endMs),
  };
}

/** The account's money, or null when there is no such account. */
export function accountMoney(db: Store, accountId: string, nowMs: number = Date.now()): AccountMoney | null {
  const acct = db.query<{ balance: number; reserved: number }, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?").get(accountId);
  if (!acct) return null;
  const credited = db
    .query<{ units: number }, [string]>(
      "SELECT COALESCE(SUM(amount), 0) AS units FROM ledger_entries WHERE account_id = ? AND kind IN ('credit', 'debit')",
    )
    .get(accountId)!.units;
  return {
    credited: usdNumber(credited),
    balance: usdNumber(acct.balance),
    reserved: usdNumber(acct.reserved),
    available: usdNumber(acct.balance - acct.reserved),
    spend: spendPeriods(db, accountId, nowMs),
  };
}
