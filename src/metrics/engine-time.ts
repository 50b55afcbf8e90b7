/**
 * Time each request spends waiting on an upstream or a local engine, so the gateway's own overhead
 * (total − engine time) can be measured. Keyed by request id, so code far from the HTTP layer
 * (pipelines, engines) reports engine time with only the id in hand.
 */

/** One request's clock; the HTTP layer opens it on arrival and reads it when the request ends. */
export interface EngineClock {
  /** Milliseconds spent waiting on an upstream or an engine. */
  engineMs: number;
}

const clocks = new Map<string, EngineClock>();

export function openEngineClock(requestId: string, clock: EngineClock): void {
  clocks.set(requestId, clock);
}

/** The request is over: later waits no longer count. */
export function closeEngineClock(requestId: string): void {
  clocks.delete(requestId);
}

/** Adds time spent waiting on an upstream or a local engine to the request's account. */
export function addEngineTime(requestId: string, ms: number): void {
  const clock = clocks.get(requestId);
  if (clock) clock.engineMs += ms;
}

/** Awaits `work`, counting the wait as engine time of the request. */
export async function timeEngine<T>(requestId: string, work: Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await work;
  } finally {
    addEngineTime(requestId, performance.now() - t0);
  }
}
