import { describe, expect, test } from "bun:test";
import { MetricsHistory, SAMPLE_EVERY_MS, SAMPLES_KEPT, type Totals } from "./metrics-history";

const BOUNDS = [0.01, 0.1, 1];

function setup() {
  let t = 1_000_000;
  const totals: Totals = { requests: 0, clientErrors: 0, serverErrors: 0, latencySum: 0, latencyCount: 0, buckets: [0, 0, 0] };
  const observe = (seconds: number, status = 200) => {
    totals.requests++;
    if (status >= 500) totals.serverErrors++;
    else if (status >= 400) totals.clientErrors++;
    totals.latencySum += seconds;
    totals.latencyCount++;
    BOUNDS.forEach((b, i) => seconds <= b && totals.buckets[i]!++);
  };
  const history = new MetricsHistory(() => ({ ...totals, buckets: [...totals.buckets] }), BOUNDS, () => t);
  return { history, observe, advance: (ms: number) => (t += ms) };
}

describe("MetricsHistory", () => {
  test("rates per second and latency (mean, p95 from the buckets) per sampled interval", () => {
    const { history, observe, advance } = setup();
    history.sample();
    for (let i = 0; i < 18; i++) observe(0.005);
    observe(0.5, 502);
    observe(0.05, 429);
    advance(SAMPLE_EVERY_MS);
    history.sample();
    const [p] = history.points();
    expect(p).toEqual({ t: 1010, rps: 2, clientErrorsPerSec: 0.1, serverErrorsPerSec: 0.1, meanMs: 32, p95Ms: 100 });
  });

  test("an interval without requests has rates of zero and no latency", () => {
    const { history, advance } = setup();
    history.sample();
    advance(SAMPLE_EVERY_MS);
    history.sample();
    expect(history.points()[0]).toMatchObject({ rps: 0, meanMs: null, p95Ms: null });
  });

  test("keeps one hour of samples; the last point runs from the newest sample to now", () => {
    const { history, observe, advance } = setup();
    for (let i = 0; i < SAMPLES_KEPT + 50; i++) {
      history.sample();
      advance(SAMPLE_EVERY_MS);
    }
    observe(0.005);
    advance(-SAMPLE_EVERY_MS / 2);
    const points = history.points();
    expect(points.length).toBe(SAMPLES_KEPT + 1);
    expect(points.at(-1)!.rps).toBe(0.2);
  });
});
