/**
 * The last hour of the server's own request metrics, for the operator view's charts: every 10 s
 * the cumulative totals of switchyard_requests_total and switchyard_request_duration_seconds
 * (API endpoints, /v1/*) are copied into a ring of 360 samples. Differences between neighbours
 * give the request rate, the error rates and the latency (mean and 95th percentile, read from the
 * histogram's buckets). Nothing is added to the request path: sampling reads the counters.
 */

export interface Totals {
  requests: number;
  clientErrors: number;
  serverErrors: number;
  latencySum: number;
  latencyCount: number;
  /** Cumulative histogram buckets (count of observations ≤ each bound), seconds. */
  buckets: number[];
}

export interface HistoryPoint {
  /** End of the interval, seconds since the epoch. */
  t: number;
  /** Requests per second over the interval; 4xx and 5xx answers per second. */
  rps: number;
  clientErrorsPerSec: number;
  serverErrorsPerSec: number;
  /** Latency in ms over the interval; null when no request ended in it. */
  meanMs: number | null;
  p95Ms: number | null;
}

export const SAMPLE_EVERY_MS = 10_000;
export const SAMPLES_KEPT = 360;

type Sample = Totals & { at: number };

export class MetricsHistory {
  private readonly samples: Sample[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly read: () => Totals,
    private readonly bounds: number[],
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    if (this.timer !== null) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
    this.timer.unref?.();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  sample(): void {
    this.samples.push({ ...this.read(), at: this.now() });
    if (this.samples.length > SAMPLES_KEPT + 1) this.samples.shift();
  }

  /** One point per sampled interval, plus the interval from the last sample to now. */
  points(): HistoryPoint[] {
    const all = [...this.samples, { ...this.read(), at: this.now() }];
    const out: HistoryPoint[] = [];
    for (let i = 1; i < all.length; i++) {
      const p = this.point(all[i - 1]!, all[i]!);
      if (p) out.push(p);
    }
    return out;
  }

  private point(a: Sample, b: Sample): HistoryPoint | null {
    const seconds = (b.at - a.at) / 1000;
    if (seconds <= 0.05) return null;
    const count = b.latencyCount - a.latencyCount;
    return {
      t: Math.round(b.at / 1000),
      rps: round((b.requests - a.requests) / seconds),
      clientErrorsPerSec: round((b.clientErrors - a.clientErrors) / seconds),
      serverErrorsPerSec: round((b.serverErrors - a.serverErrors) / seconds),
      meanMs: count > 0 ? round(((b.latencySum - a.latencySum) / count) * 1000) : null,
      p95Ms: count > 0 ? this.percentileMs(a.buckets, b.buckets, count, 0.95) : null,
    };
  }

  /** The smallest bucket bound holding `q` of the interval's observations (null: above every bound). */
  private percentileMs(before: number[], after: number[], count: number, q: number): number | null {
    for (let i = 0; i < this.bounds.length; i++) {
      if ((after[i] ?? 0) - (before[i] ?? 0) >= q * count) return round(this.bounds[i]! * 1000);
    }
    return null;
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;
