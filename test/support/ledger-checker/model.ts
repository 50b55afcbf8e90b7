/**
 * The ledger checker's model (sim.ts runs it): its seeded random numbers, the bounds it simulates,
 * the prices it charges by and the arithmetic of what the ledger must charge and record for a
 * request's usage, and the record it keeps of each request — with the options and report of a run.
 */
import type { Consumption } from "../../../src/billing/ledger-store";
import type { Hold } from "../../../src/billing/hold";
import type { CheckerKey } from "./backend";

export { rng } from "../seeded-random";

/** The simulated bounds (seconds): SWITCHYARD_STREAM_MAX_SECONDS and SWITCHYARD_HOLD_EXPIRY_SECONDS. */
export const STREAM_MAX_S = 900;
export const HOLD_EXPIRY_S = 1200;

/**
 * Units per token: 2 per uncached prompt token, 1 per prompt token read from the cache, 3 per one
 * written to it (dearer than input, as some labs price writes), 3 per output token. Reads and
 * writes are parts of the prompt, cut to it (reads first), as billing/prices.ts prices them.
 */
function parts(u: Consumption): { input: number; read: number; written: number } {
  const input = u.inputTokens ?? 0;
  const read = Math.min(u.cachedTokens ?? 0, input);
  return { input, read, written: Math.min(u.cacheWriteTokens ?? 0, input - read) };
}
export const price = (u: Consumption) => {
  const { input, read, written } = parts(u);
  return 2 * (input - read - written) + read + 3 * written + 3 * (u.outputTokens ?? 0);
};

/** The figures a charge entry records. */
export interface Recorded {
  input_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  cache_saved: number;
}

export function recordedOf(c: Consumption): Recorded {
  const { input, read, written } = parts(c);
  const saved = read + written === 0 ? 0 : price({ inputTokens: input, outputTokens: c.outputTokens }) - price(c);
  return { input_tokens: input, cached_tokens: read, cache_write_tokens: written, output_tokens: c.outputTokens ?? 0, cache_saved: saved };
}

/**
 * What the ledger must charge and record for `usage` on a hold of `budget`: the model's own
 * arithmetic. Over the hold, the prompt and the output are cut to the budget, and the cache's
 * parts to the prompt they are part of.
 */
export function expectedCharge(budget: Consumption, usage: Consumption): { charge: number; recorded: Recorded } {
  const hold = price(budget);
  const reported = price(usage);
  if (reported <= hold) return { charge: reported, recorded: recordedOf(usage) };
  const clamped: Consumption = {
    inputTokens: Math.min(usage.inputTokens ?? 0, budget.inputTokens ?? 0),
    outputTokens: Math.min(usage.outputTokens ?? 0, budget.outputTokens ?? 0),
    cachedTokens: usage.cachedTokens,
    cacheWriteTokens: usage.cacheWriteTokens,
  };
  return { charge: Math.min(price(clamped), hold), recorded: recordedOf(clamped) };
}

export type Outcome = "pending" | "refused" | "charged" | "not charged" | "unknown";

export interface RequestModel {
  id: string;
  account: string;
  key: CheckerKey | null;
  /** Process generation it ran in: a crash makes every unfinished request's outcome unknown. */
  gen: number;
  outcome: Outcome;
  /** The charge a resolved settle reported. */
  charged: number | null;
  /** What its charge entry must record, once it settles. */
  recorded: Recorded | null;
  hold: number | null;
  holdObj: Hold | null;
  /** The instance it ran on. */
  inst: number;
  done: boolean;
  /** When its hold was dated (its instance's clock, Unix seconds, as the reserve was sent). */
  datedAt: number;
}

export interface CheckerOptions {
  seed: number;
  steps: number;
  accounts?: number;
}

export interface CheckerReport {
  seed: number;
  steps: number;
  seconds: number;
  requests: number;
  charged: number;
  /** Holds released without a charge (failed requests, clients gone, charges that could not be written). */
  notCharged: number;
  refusedCredits: number;
  /** Refused 402 because the key's spend limit had too little left in its period. */
  refusedKeyLimit: number;
  refusedUnavailable: number;
  /** Times the ledger's clock was moved forward (limit periods roll over). */
  clockMoves: number;
  crashes: number;
  faults: number;
  /** Streams ended at their deadline (charged as delivered). */
  deadlines: number;
  /** Holds the expiry sweep voided, and requests that then found their hold expired. */
  expired: number;
  expiredRefused: number;
  /** Charges that recorded prompt tokens read from or written to the cache. */
  cacheCharges: number;
  /** Database server stops (PostgreSQL), and keys whose limit_reset was changed. */
  databaseRestarts: number;
  resetChanges: number;
}

export class CheckFailed extends Error {}
