/**
 * Time each request spends waiting on an upstream or a local engine, so the gateway's own overhead
 * (total − engine time) can be measured. Keyed by request id, so code far from the HTTP layer
 * (pipelines, engines) reports engine time with only the id in hand.
 */

/** One request's clock; the HTTP layer opens it on arrival and reads it when the request ends. */
export interface EngineClock {
  /** Milliseconds spent waiting on an upstream or an engine. */
  engineMs: number;
  /** performance.now() at the request's arrival. */
  startedAt?: number;
}

const clocks = new Map<string, EngineClock>();

export function openEngineClock(requestId: string, clock: EngineClock): void {
  clocks.set(requestId, clock);
}

/** The request is over: later waits no longer count. */
export function closeEngineClock(requestId: string): void {
  clocks.delete(requestId);
}

/** Requests whose clock is open: those in flight (a test checks every request closes its own). */
export function openEngineClocks(): number {
  return clocks.size;
}

/** Seconds since the request arrived (null once it is over, or for an unknown id). */
export function secondsSinceArrival(requestId: string): number | null {
  const started = clocks.get(requestId)?.startedAt;
  return started === undefined ? null : (performance.now() - started) / 1000;
}

/** Adds time spent waiting on an upstream or a local engine to the request's account. */
export function addEngineTime(requestId: string, ms: number): void {
  const clock = clocks.get(requestId);
  if (clock) clock.engineMs += ms;
}

/**
 * Resolves as `work` does, counting the wait as engine time of the request. A plain then() rather
 * than an async function: this wraps every upstream read, and the async frame cost more than the
 * bookkeeping.
 */
export function timeEngine<T>(requestId: string, work: Promise<T>): Promise<T> {
  const t0 = performance.now();
  return work.then(
    (value) => {
      addEngineTime(requestId, performance.now() - t0);
      return value;
    },
    (err: unknown) => {
      addEngineTime(requestId, performance.now() - t0);
      throw err;
    },
  );
}
