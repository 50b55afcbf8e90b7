/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the
 * text exposition format at GET /metrics. Recording is a map lookup and an add: cheap enough
 * for every request and every batch.
 */
type Labels = Record<string, string | number>;

const NEEDS_ESCAPE = /[\\"\n]/;

function key(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let out = "";
  for (const n of names) {
    const v = String(labels[n]);
    // Escaping is rare (label values are route patterns and ids): test before rewriting.
    const escaped = NEEDS_ESCAPE.test(v) ? v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n") : v;
    out += `${out ? "," : ""}${n}="${escaped}"`;
  }
  return out;
}

abstract class Metric {
  constructor(readonly name: string, readonly help: string, readonly type: "counter" | "gauge" | "histogram") {}
  abstract render(): string[];
}

export class Counter extends Metric {
  private values = new Map<string, number>();
  constructor(name: string, help: string) {
    super(name, help, "counter");
  }
  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(key(labels)) ?? 0;
  }
  /** Visits every series: its value and its rendered labels (`endpoint="/v1/x",status="200"`). */
  forEach(visit: (value: number, labels: string) => void): void {
    for (const [k, v] of this.values) visit(v, k);
  }
  render(): string[] {
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ""} ${v}`);
  }
}

export class Gauge extends Metric {
  private values = new Map<string, number>();
  constructor(name: string, help: string, private readonly collect?: () => number) {
    super(name, help, "gauge");
  }
  set(value: number, labels: Labels = {}): void {
    this.values.set(key(labels), value);
  }
  add(by: number, labels: Labels = {}): void {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(key(labels)) ?? 0;
  }
  render(): string[] {
    if (this.collect) return [`${this.name} ${this.collect()}`];
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ""} ${v}`);
  }
}

export class Histogram extends Metric {
  private series = new Map<string, { buckets: number[]; sum: number; count: number }>();
  constructor(name: string, help: string, readonly bounds: number[]) {
    super(name, help, "histogram");
  }
  observe(value: number, labels: Labels = {}): void {
    const k = key(labels);
    let s = this.series.get(k);
    if (!s) this.series.set(k, (s = { buckets: new Array(this.bounds.length).fill(0), sum: 0, count: 0 }));
    for (let i = 0; i < this.bounds.length; i++) if (value <= this.bounds[i]!) s.buckets[i]!++;
    s.sum += value;
    s.count++;
  }
  count(labels: Labels = {}): number {
    return this.series.get(key(labels))?.count ?? 0;
  }
  sum(labels: Labels = {}): number {
    return this.series.get(key(labels))?.sum ?? 0;
  }
  /** All series whose rendered labels pass `match`, added up: per-bucket counts, sum and count. */
  merged(match: (labels: string) => boolean = () => true): { buckets: number[]; sum: number; count: number } {
    const out = { buckets: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 };
    for (const [k, s] of this.series) {
      if (!match(k)) continue;
      for (let i = 0; i < s.buckets.length; i++) out.buckets[i]! += s.buckets[i]!;
      out.sum += s.sum;
      out.count += s.count;
    }
    return out;
  }
  render(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.series) {
      const sep = k ? "," : "";
      this.bounds.forEach((b, i) => out.push(`${this.name}_bucket{${k}${sep}le="${b}"} ${s.buckets[i]}`));
      out.push(`${this.name}_bucket{${k}${sep}le="+Inf"} ${s.count}`);
      out.push(`${this.name}_sum${k ? `{${k}}` : ""} ${s.sum}`);
      out.push(`${this.name}_count${k ? `{${k}}` : ""} ${s.count}`);
    }
    return out;
  }
}

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();

  private add<M extends Metric>(m: M): M {
    const existing = this.metrics.get(m.name);
    if (existing) return existing as M;
    this.metrics.set(m.name, m);
    return m;
  }

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }
  gauge(name: string, help: string, collect?: () => number): Gauge {
    return this.add(new Gauge(name, help, collect));
  }
  histogram(name: string, help: string, bounds: number[]): Histogram {
    return this.add(new Histogram(name, help, bounds));
  }

  render(): string {
    const lines: string[] = [];
    for (const m of this.metrics.values()) {
      lines.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`, ...m.render());
    }
    return lines.join("\n") + "\n";
  }
}

/** Seconds buckets for latencies from sub-millisecond gateway overhead up to long generations. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
