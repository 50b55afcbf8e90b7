/**
 * The operator's overview (docs/dashboard.md): revenue is the sum of charge entries across
 * accounts over UTC days (today, the last 7 and 30 days, today included), top models and top
 * accounts by spend over a period, and each account's spend. Exact integer sums from the ledger;
 * converted to USD only for the answer.
 */
import { usdNumber } from "./money";

export interface ChargeSum {
  /** The model or account id (null: charges without one). */
  key: string | null;
  requests: number;
  cost_units: number;
}

export interface RevenueRecords {
  /** Charges in [from, to) (unix seconds) summed, and grouped by model or account, highest spend first. */
  chargedIn(fromSeconds: number, toSeconds: number): Promise<{ requests: number; cost_units: number }>;
  chargedBy(group: "model" | "account", fromSeconds: number, toSeconds: number, limit: number | null): Promise<ChargeSum[]>;
}

const DAY_MS = 86_400_000;
export const TOP_ROWS = 10;
export const OVERVIEW_PERIODS = [1, 7, 30] as const;

/** [start, end) in unix seconds of the last `days` UTC days, today included. */
export function lastDays(days: number, nowMs: number): { from: number; to: number } {
  const end = Math.floor(nowMs / DAY_MS) * DAY_MS + DAY_MS;
  return { from: (end - days * DAY_MS) / 1000, to: end / 1000 };
}

const view = (s: { requests: number; cost_units: number }) => ({ requests: s.requests, revenue: usdNumber(s.cost_units) });

export async function revenueOverview(r: RevenueRecords, topDays: number, nowMs: number = Date.now()) {
  const [today, week, month] = await Promise.all(OVERVIEW_PERIODS.map((d) => {
    const p = lastDays(d, nowMs);
    return r.chargedIn(p.from, p.to);
  }));
  const top = lastDays(topDays, nowMs);
  const [models, accounts] = await Promise.all([
    r.chargedBy("model", top.from, top.to, TOP_ROWS),
    r.chargedBy("account", top.from, top.to, TOP_ROWS),
  ]);
  return {
    revenue: { today: view(today!), last_7_days: view(week!), last_30_days: view(month!) },
    top: {
      days: topDays,
      start: new Date(top.from * 1000).toISOString(),
      end: new Date(top.to * 1000).toISOString(),
      models: models.map((m) => ({ model: m.key, ...view(m) })),
      accounts: accounts.map((a) => ({ account_id: a.key, ...view(a) })),
    },
  };
}

/** Each account's spend over the last `days` UTC days, in units, by account id. */
export async function spendByAccount(r: RevenueRecords, days: number, nowMs: number = Date.now()): Promise<Map<string, number>> {
  const p = lastDays(days, nowMs);
  const rows = await r.chargedBy("account", p.from, p.to, null);
  return new Map(rows.map((x) => [x.key ?? "", x.cost_units]));
}
