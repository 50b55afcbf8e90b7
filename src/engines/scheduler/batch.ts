/**
 * Pure batch selection: which queued jobs run together next. Kept apart from the Scheduler's
 * timers and promises so it can be tested table-style.
 */

export interface Candidate {
  cost: number;
  /** Arrival order; lower is older. */
  seq: number;
  /** Whose job it is ("" when nobody's in particular). */
  account?: string;
}

/**
 * A lane in the order accounts take their turns: the jobs of the account served least recently
 * first (`served`: account → the batch number it last had a job in; never served counts as
 * oldest), oldest first within an account, ties between accounts broken by their oldest job. The
 * next batch is anchored on the first of them, so an account with a backlog cannot keep another
 * account's job waiting for more than one batch per account with work.
 */
export function fairOrder<C extends Candidate>(lane: readonly C[], served: ReadonlyMap<string, number>): C[] {
  const turn = (c: C) => served.get(c.account ?? "") ?? -1;
  return [...lane].sort((a, b) => turn(a) - turn(b) || a.seq - b.seq);
}

export interface BatchLimits {
  maxBatchSize: number;
  /** Budget on the sum of costs in one batch; a single job above it still runs, alone. */
  maxBatchTokens: number;
}

/**
 * Picks the next batch from the priority lane and the normal lane (each oldest first).
 * The anchor is the oldest job of the first non-empty lane, so nothing starves within a lane.
 * The rest are filled priority lane first, then the normal lane, each preferring jobs whose cost
 * is closest to the anchor's (similar lengths → little padding), while the batch stays within
 * maxBatchSize and maxBatchTokens. Returns the chosen jobs sorted by cost (ascending).
 */
export function selectBatch<C extends Candidate>(priority: readonly C[], normal: readonly C[], limits: BatchLimits): C[] {
  const anchor = priority[0] ?? normal[0];
  if (!anchor) return [];
  const chosen: C[] = [anchor];
  let tokens = anchor.cost;
  const byCloseness = (lane: readonly C[]) =>
    lane.filter((c) => c !== anchor).sort((a, b) => Math.abs(a.cost - anchor.cost) - Math.abs(b.cost - anchor.cost) || a.seq - b.seq);
  for (const lane of [priority, normal]) {
    for (const c of byCloseness(lane)) {
      if (chosen.length >= limits.maxBatchSize) break;
      if (tokens + c.cost > limits.maxBatchTokens) continue;
      chosen.push(c);
      tokens += c.cost;
    }
  }
  return chosen.sort((a, b) => a.cost - b.cost || a.seq - b.seq);
}

/** True when the queue already holds a full batch, so there is no point waiting for company. */
export function batchIsFull(queued: readonly Candidate[], limits: BatchLimits): boolean {
  if (queued.length >= limits.maxBatchSize) return true;
  let tokens = 0;
  for (const c of queued) tokens += c.cost;
  return tokens >= limits.maxBatchTokens;
}
