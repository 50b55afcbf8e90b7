/** The scheduler's Prometheus series, labelled by scheduler name (the model id). */
import { LATENCY_BUCKETS, type Counter, type Gauge, type Histogram, type MetricsRegistry } from "../../metrics/registry";

const SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const TOKEN_BUCKETS = [16, 64, 256, 1024, 4096, 16384, 65536];

export class SchedulerMetrics {
  private readonly batches: Counter;
  private readonly size: Histogram;
  private readonly tokens: Histogram;
  private readonly queueDepth: Gauge;
  private readonly queueWait: Histogram;
  private readonly runSeconds: Histogram;
  private readonly rejects: Counter;
  private readonly labels: { scheduler: string };

  constructor(m: MetricsRegistry, name: string) {
    this.labels = { scheduler: name };
    this.batches = m.counter("switchyard_scheduler_batches_total", "Batches run by a micro-batching scheduler.");
    this.size = m.histogram("switchyard_scheduler_batch_size", "Jobs per batch.", SIZE_BUCKETS);
    this.tokens = m.histogram("switchyard_scheduler_batch_cost", "Sum of job costs (tokens) per batch.", TOKEN_BUCKETS);
    this.queueDepth = m.gauge("switchyard_scheduler_queue_depth", "Jobs waiting in the scheduler's queue.");
    this.queueWait = m.histogram("switchyard_scheduler_queue_wait_seconds", "Time a job waited before its batch started.", LATENCY_BUCKETS);
    this.runSeconds = m.histogram("switchyard_scheduler_batch_seconds", "Time to run one batch.", LATENCY_BUCKETS);
    this.rejects = m.counter("switchyard_scheduler_rejected_total", "Jobs that left the queue without running, by reason.");
    this.queueDepth.set(0, this.labels);
  }

  depth(n: number): void {
    this.queueDepth.set(n, this.labels);
  }
  batchStarted(jobs: number, cost: number, remaining: number): void {
    this.batches.inc(this.labels);
    this.size.observe(jobs, this.labels);
    this.tokens.observe(cost, this.labels);
    this.queueDepth.set(remaining, this.labels);
  }
  waited(seconds: number): void {
    this.queueWait.observe(seconds, this.labels);
  }
  batchFinished(seconds: number): void {
    this.runSeconds.observe(seconds, this.labels);
  }
  rejected(reason: "queue_full" | "account_queue_full" | "aborted"): void {
    this.rejects.inc({ ...this.labels, reason });
  }
}
