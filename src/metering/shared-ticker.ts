/**
 * One interval timer per period for everything that checks something periodically (each open
 * stream's heartbeat and stalled-client checks, see streaming.ts), instead of a setInterval per
 * stream: a stream then costs a Set insert and delete, not the creation and clearing of timers,
 * and a thousand open streams wake the event loop once per period, not a thousand times.
 */

type Check = () => void;

interface Wheel {
  timer: ReturnType<typeof setInterval>;
  checks: Set<Check>;
}

const wheels = new Map<number, Wheel>();

/**
 * Calls `check` every `periodMs` (with the others of that period) until the returned function
 * is called. The timer of a period exists only while something is registered on it.
 */
export function everyPeriod(periodMs: number, check: Check): () => void {
  let wheel = wheels.get(periodMs);
  if (wheel === undefined) {
    const checks = new Set<Check>();
    const timer = setInterval(() => {
      for (const c of checks) {
        try {
          c();
        } catch {
          // One stream's check must not stop the others'.
        }
      }
    }, periodMs);
    wheels.set(periodMs, (wheel = { timer, checks }));
  }
  const w = wheel;
  w.checks.add(check);
  return () => {
    if (!w.checks.delete(check) || w.checks.size > 0) return;
    clearInterval(w.timer);
    if (wheels.get(periodMs) === w) wheels.delete(periodMs);
  };
}

/** Periods with a live timer (tests check that none is left behind). */
export function activePeriods(): number {
  return wheels.size;
}
