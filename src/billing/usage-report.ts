/**
 * The usage report of GET /v1/usage: the account's charge entries in a period, summed per group.
 * Everything is computed from the immutable ledger, so rows and totals are exactly the sum of
 * its entries (integer units; converted to USD only for the JSON). The sums are taken by the
 * store (UsageRecords: store/sqlite/usage.ts, store/postgres/usage.ts).
 */
import { usdNumber } from "./money";
import type { Grouping, UsageQuery } from "./usage-query";

/** Charge sums of one group (or of the whole period), in integer units. */
export interface SumRow {
  /** UTC date, YYYY-MM-DD. */
  day?: string;
  model?: string | null;
  endpoint?: string | null;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  /** Of input_tokens, read from and written to the upstream's prompt cache. */
  cached_input_tokens: number;
  cache_write_tokens: number;
  characters: number;
  cost_units: number;
}

/** What the reports read: sums of charge entries, the balance, the credits. */
export interface UsageRecords {
  /** The account's balance and reserved amount, or null when there is no such account. */
  balance(accountId: string): Promise<{ balance: number; reserved: number } | null>;
  /**
   * Sums of the account's charge entries created in [fromSeconds, toSeconds), one row per group in
   * the order of `groupBy` (sorted by it); with no grouping, one row of totals (zeros when none).
   */
  sums(accountId: string, fromSeconds: number, toSeconds: number, groupBy: Grouping[]): Promise<SumRow[]>;
  /** Σ credits and deductions the operator made, all time, in units. */
  credited(accountId: string): Promise<number>;
}

function figures(r: SumRow) {
  return {
    requests: r.requests,
    input_tokens: r.input_tokens,
    cached_input_tokens: r.cached_input_tokens,
    cache_write_tokens: r.cache_write_tokens,
    output_tokens: r.output_tokens,
    characters: r.characters,
    cost: usdNumber(r.cost_units),
  };
}

/** Ledger times are whole seconds: [start, end) in ms maps to [ceil(start), ceil(end)) seconds. */
function periodSeconds(startMs: number, endMs: number): [from: number, to: number] {
  return [Math.ceil(startMs / 1000), Math.ceil(endMs / 1000)];
}

/** The units charged to the account in [startMs, endMs): the totals row of usageReport. */
export async function chargedInPeriod(records: UsageRecords, accountId: string, startMs: number, endMs: number): Promise<number> {
  const [total] = await records.sums(accountId, ...periodSeconds(startMs, endMs), []);
  return total!.cost_units;
}

export async function usageReport(records: UsageRecords, accountId: string, q: UsageQuery) {
  const [from, to] = periodSeconds(q.startMs, q.endMs);
  const [acct, [total], rows] = await Promise.all([
    records.balance(accountId),
    records.sums(accountId, from, to, []),
    q.groupBy.length ? records.sums(accountId, from, to, q.groupBy) : Promise.resolve([]),
  ]);
  const balance = acct?.balance ?? 0;
  const reserved = acct?.reserved ?? 0;
  return {
    object: "usage",
    currency: "USD",
    start: new Date(q.startMs).toISOString(),
    end: new Date(q.endMs).toISOString(),
    group_by: q.groupBy,
    balance: { total: usdNumber(balance), available: usdNumber(balance - reserved), reserved: usdNumber(reserved) },
    totals: figures(total!),
    rows: rows.map((r) => ({
      ...(q.groupBy.includes("day") ? { day: r.day } : {}),
      ...(q.groupBy.includes("model") ? { model: r.model ?? null } : {}),
      ...(q.groupBy.includes("endpoint") ? { endpoint: r.endpoint ?? null } : {}),
      ...figures(r),
    })),
  };
}
