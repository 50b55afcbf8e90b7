/**
 * An account's money at a glance, for the self-service endpoints (GET /v1/key, /v1/credits) and
 * the dashboard: what the operator credited, what was spent (all time and in the current UTC day,
 * week and month) and the balance. Spend is usageReport's totals row, so every figure is the same
 * sum of ledger charge entries that GET /v1/usage reports for that period.
 */
import { usdNumber, type UsdJson } from "./money";
import { currentMonth } from "./usage-query";
import { chargedInPeriod, type UsageRecords } from "./usage-report";

const DAY_MS = 86_400_000;
/** Far enough ahead to include every charge, near enough to stay a valid date. */
const END_OF_TIME_MS = Date.UTC(9999, 0, 1);

export interface SpendPeriods {
  /** All time. */
  total: UsdJson;
  /** The current UTC day, week (from Monday 00:00) and calendar month, in USD. */
  day: UsdJson;
  week: UsdJson;
  month: UsdJson;
}

export interface AccountMoney {
  /** Net credits the operator added (credits minus deductions), all time, in USD. */
  credited: UsdJson;
  /** The balance, what requests in flight hold, and the difference, in USD. */
  balance: UsdJson;
  reserved: UsdJson;
  available: UsdJson;
  spend: SpendPeriods;
}

/** The UTC midnights that open the current day and ISO week (weeks start on Monday). */
export function currentDayAndWeek(nowMs: number): { dayStartMs: number; weekStartMs: number } {
  const dayStartMs = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const sinceMonday = (new Date(dayStartMs).getUTCDay() + 6) % 7;
  return { dayStartMs, weekStartMs: dayStartMs - sinceMonday * DAY_MS };
}

async function spent(records: UsageRecords, accountId: string, startMs: number, endMs: number): Promise<UsdJson> {
  return usdNumber(await chargedInPeriod(records, accountId, startMs, endMs));
}

export async function spendPeriods(records: UsageRecords, accountId: string, nowMs: number = Date.now()): Promise<SpendPeriods> {
  const { dayStartMs, weekStartMs } = currentDayAndWeek(nowMs);
  const month = currentMonth(nowMs);
  const [total, day, week, monthly] = await Promise.all([
    spent(records, accountId, 0, END_OF_TIME_MS),
    spent(records, accountId, dayStartMs, dayStartMs + DAY_MS),
    spent(records, accountId, weekStartMs, weekStartMs + 7 * DAY_MS),
    spent(records, accountId, month.startMs, month.endMs),
  ]);
  return { total, day, week, month: monthly };
}

/** The account's money, or null when there is no such account. */
export async function accountMoney(records: UsageRecords, accountId: string, nowMs: number = Date.now()): Promise<AccountMoney | null> {
  const acct = await records.balance(accountId);
  if (!acct) return null;
  const [credited, spend] = await Promise.all([records.credited(accountId), spendPeriods(records, accountId, nowMs)]);
  return {
    credited: usdNumber(credited),
    balance: usdNumber(acct.balance),
    reserved: usdNumber(acct.reserved),
    available: usdNumber(acct.balance - acct.reserved),
    spend,
  };
}
