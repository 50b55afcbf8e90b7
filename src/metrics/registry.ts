/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the
 * text exposition format at GET /metrics. Recording is one small string, a map lookup and an add
 * (the exposition key is built once per label set): cheap enough for every request and batch.
 */
import type { LabelCap } from "./label-cap";

type Labels = Record<string, string | number>;

const NEEDS_ESCAPE = /[\\"\n]/;

/** The exposition-format label set: names sorted, values escaped ("a=\"1\",b=\"2\""). */
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

/**
 * The labels as given, names and values in their own order: cheap to build (no array, no sort,
 * no escaping), so recording looks a series up by this and builds key() only on its first sight.
 */
function rawKey(labels: Labels): string {
  let out = "";
  for (const n in labels) out += n + "\u0000" + labels[n] + "\u0001";
  return out;
}

/**
 * Series of one metric by label set. Recording goes by rawKey(); the same labels written in
 * another order land in the same series through the exposition key.
 */
class SeriesMap<S> {
  private readonly byRaw = new Map<string, S>();
  readonly byKey = new Map<string, S>();
  constructor(private readonly create: () => S, private readonly cap: LabelCap | null = null) {}

  /**
   * The series for these labels, created on first use. A capped label's value past the cap is
   * recorded under "other", and that label set is not remembered (so nothing grows with it).
   */
  at(labels: Labels): S {
    const raw = rawKey(labels);
    let s = this.byRaw.get(raw);
    if (s === undefined) {
      const capped = this.capped(labels);
      const k = key(capped);
      s = this.byKey.get(k);
      if (s === undefined) this.byKey.set(k, (s = this.create()));
      if (capped === labels) this.byRaw.set(raw, s);
    }
    return s;
  }

  /** The labels as recorded: a model past the cap (label-cap.ts) replaced by "other". */
  private capped(labels: Labels): Labels {
    return this.cap === null ? labels : this.cap.capped(labels);
  }

  /** The series for these labels if it was ever recorded. */
  find(labels: Labels): S | undefined {
    return this.byRaw.get(rawKey(labels)) ?? this.byKey.get(key(labels));
  }
}

abstract class Metric {
  constructor(readonly name: string, readonly help: string, readonly type: "counter" | "gauge" | "histogram") {}
  abstract render(): string[];
}

export interface Cell {
  value: number;
}
const newCell = (): Cell => ({ value: 0 });

export class Counter extends Metric {
  private readonly series: SeriesMap<Cell>;
  constructor(name: string, help: string, cap: LabelCap | null = null) {
    super(name, help, "counter");
    this.series = new SeriesMap(newCell, cap);
  }
  inc(labels: Labels = {}, by = 1): void {
    this.series.at(labels).value += by;
  }
  /**
   * The series for these labels, for a caller that records into it again and again: adding to
   * its `value` is an increment without building the label key each time.
   */
  cell(labels: Labels = {}): Cell {
    return this.series.at(labels);
  }
  get(labels: Labels = {}): number {
    return this.series.find(labels)?.value ?? 0;
  }
  /** Visits every series: its value and its rendered labels (`endpoint="/v1/x",status="200"`). */
  forEach(visit: (value: number, labels: string) => void): void {
    for (const [k, c] of this.series.byKey) visit(c.value, k);
  }
  render(): string[] {
    return [...this.series.byKey].map(([k, c]) => `${this.name}${k ? `{${k}}` : ""} ${c.value}`);
  }
}

export class Gauge extends Metric {
  private readonly series: SeriesMap<Cell>;
  constructor(name: string, help: string, private readonly collect?: () => number, cap: LabelCap | null = null) {
    super(name, help, "gauge");
    this.series = new SeriesMap(newCell, cap);
  }
  set(value: number, labels: Labels = {}): void {
    this.series.at(labels).value = value;
  }
  add(by: number, labels: Labels = {}): void {
    this.series.at(labels).value += by;
  }
  get(labels: Labels = {}): number {
    return this.series.find(labels)?.value ?? 0;
  }
  render(): string[] {
    if (this.collect) return [`${this.name} ${this.collect()}`];
    return [...this.series.byKey].map(([k, c]) => `${this.name}${k ? `{${k}}` : ""} ${c.value}`);
  }
}

/** One series a collected metric reports at render time. */
export interface Sample {
  labels: Labels;
  value: number;
}

/**
 * A metric whose series are read when /metrics is rendered (process figures, breaker states),
 * not recorded as things happen.
 */
export class Collected extends Metric {
  constructor(name: string, help: string, type: "counter" | "gauge", private readonly collect: () => Sample[]) {
    super(name, help, type);
  }
  render(): string[] {
    return this.collect().map(({ labels, value }) => {
      const k = key(labels);
      return `${this.name}${k ? `{${k}}` : ""} ${value}`;
    });
  }
}

export interface HistogramSeries {
  /** Observations per bucket, not cumulative (rendering sums them): one increment per observation. */
  perBucket: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric {
  private readonly series: SeriesMap<HistogramSeries>;
  constructor(name: string, help: string, readonly bounds: number[], cap: LabelCap | null = null) {
    super(name, help, "histogram");
    this.series = new SeriesMap(() => ({ perBucket: new Array<number>(bounds.length).fill(0), sum: 0, count: 0 }), cap);
  }
  observe(value: number, labels: Labels = {}): void {
    this.observeIn(this.series.at(labels), value);
  }
  /** The series for these labels, for a caller that observes into it again and again (observeIn). */
  seriesOf(labels: Labels = {}): HistogramSeries {
    return this.series.at(labels);
  }
  /** Records `value` in a series of this histogram (from seriesOf). */
  observeIn(s: HistogramSeries, value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) s.perBucket[i]!++;
    s.sum += value;
    s.count++;
  }
  count(labels: Labels = {}): number {
    return this.series.find(labels)?.count ?? 0;
  }
  sum(labels: Labels = {}): number {
    return this.series.find(labels)?.sum ?? 0;
  }
  /**
   * All series whose rendered labels pass `match`, added up: cumulative bucket counts (as
   * Prometheus renders them: observations ≤ each bound), sum and count.
   */
  merged(match: (labels: string) => boolean = () => true): { buckets: number[]; sum: number; count: number } {
    const out = { buckets: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 };
    for (const [k, s] of this.series.byKey) {
      if (!match(k)) continue;
      let cumulative = 0;
      for (let i = 0; i < s.perBucket.length; i++) out.buckets[i]! += cumulative += s.perBucket[i]!;
      out.sum += s.sum;
      out.count += s.count;
    }
    return out;
  }
  render(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.series.byKey) {
      const sep = k ? "," : "";
      let cumulative = 0;
      this.bounds.forEach((b, i) => {
        cumulative += s.perBucket[i]!;
        out.push(`${this.name}_bucket{${k}${sep}le="${b}"} ${cumulative}`);
      });
      out.push(`${this.name}_bucket{${k}${sep}le="+Inf"} ${s.count}`);
      out.push(`${this.name}_sum${k ? `{${k}}` : ""} ${s.sum}`);
      out.push(`${this.name}_count${k ? `{${k}}` : ""} ${s.count}`);
    }
    return out;
  }
}

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();

  /** `labelCap`: caps the distinct models that label series (`model`, `route`) across every metric. */
  constructor(readonly labelCap: LabelCap | null = null) {}

  /** The metric of that name, made by `make` the first time it is asked for. */
  private add<M extends Metric>(name: string, make: () => M): M {
    const existing = this.metrics.get(name);
    if (existing) return existing as M;
    const m = make();
    this.metrics.set(name, m);
    return m;
  }

  counter(name: string, help: string): Counter {
    return this.add(name, () => new Counter(name, help, this.labelCap));
  }
  gauge(name: string, help: string, collect?: () => number): Gauge {
    return this.add(name, () => new Gauge(name, help, collect, this.labelCap));
  }
  /** A metric read at render time: `collect` returns every series with its value. */
  collected(name: string, help: string, type: "counter" | "gauge", collect: () => Sample[]): Collected {
    return this.add(name, () => new Collected(name, help, type, collect));
  }
  histogram(name: string, help: string, bounds: number[]): Histogram {
    return this.add(name, () => new Histogram(name, help, bounds, this.labelCap));
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
