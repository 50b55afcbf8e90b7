import { describe, expect, test } from "bun:test";
import { MetricsRegistry } from "./registry";
import { LabelCap } from "./label-cap";

describe("MetricsRegistry", () => {
  test("labels given in any order count in one series, rendered with sorted names", () => {
    const m = new MetricsRegistry();
    const c = m.counter("c_total", "help");
    c.inc({ b: "2", a: "1" });
    c.inc({ a: "1", b: "2" }, 3);
    c.inc({ a: "1", b: 2 });
    expect(c.get({ b: "2", a: "1" })).toBe(5);
    expect(m.render()).toBe('# HELP c_total help\n# TYPE c_total counter\nc_total{a="1",b="2"} 5\n');
  });

  test("label values are escaped", () => {
    const m = new MetricsRegistry();
    m.counter("e_total", "help").inc({ v: 'a"b\\c\nd' });
    expect(m.render()).toContain('e_total{v="a\\"b\\\\c\\nd"} 1');
  });

  test("histograms render cumulative buckets, sum and count", () => {
    const m = new MetricsRegistry();
    const h = m.histogram("h_seconds", "help", [0.1, 1, 10]);
    for (const v of [0.05, 0.1, 0.5, 5, 50]) h.observe(v, { endpoint: "/x" });
    expect(h.count({ endpoint: "/x" })).toBe(5);
    expect(h.sum({ endpoint: "/x" })).toBeCloseTo(55.65);
    const lines = m.render().split("\n");
    expect(lines).toContain('h_seconds_bucket{endpoint="/x",le="0.1"} 2');
    expect(lines).toContain('h_seconds_bucket{endpoint="/x",le="1"} 3');
    expect(lines).toContain('h_seconds_bucket{endpoint="/x",le="10"} 4');
    expect(lines).toContain('h_seconds_bucket{endpoint="/x",le="+Inf"} 5');
    expect(lines).toContain('h_seconds_count{endpoint="/x"} 5');
  });

  test("gauges set, add and collect", () => {
    const m = new MetricsRegistry();
    const g = m.gauge("g", "help");
    g.set(4, { q: "a" });
    g.add(-1, { q: "a" });
    expect(g.get({ q: "a" })).toBe(3);
    m.gauge("collected", "help", () => 7);
    expect(m.render()).toContain("\ncollected 7\n");
  });

  test("collected metrics are read at render time, each series with its labels, escaped", () => {
    const m = new MetricsRegistry();
    let state = 0;
    m.collected("b_state", "help", "gauge", () => [{ labels: { route: "m#0", model: "m" }, value: state }, { labels: { route: 'x"y', model: "m" }, value: 1 }]);
    m.collected("none", "help", "counter", () => []);
    expect(m.render()).toContain('\nb_state{model="m",route="m#0"} 0\n');
    state = 2;
    const text = m.render();
    expect(text).toContain('\nb_state{model="m",route="m#0"} 2\n');
    expect(text).toContain('b_state{model="m",route="x\\"y"} 1');
    expect(text).toContain("# TYPE none counter\n");
  });

  test("a capped label: kept values always, the first others up to the cap, the rest as one \"other\" series", () => {
    const m = new MetricsRegistry(new LabelCap(3, (id) => id.startsWith("catalog-")));
    const c = m.counter("r_total", "help");
    const h = m.histogram("t_seconds", "help", [1]);
    for (let i = 0; i < 1000; i++) {
      c.inc({ endpoint: "/v1/chat/completions", model: `discovered-${i}` });
      h.observe(0.5, { model: `discovered-${i}` });
    }
    c.inc({ endpoint: "/v1/chat/completions", model: "catalog-a" });
    const lines = m.render().split("\n").filter((l) => l.startsWith("r_total"));
    expect(lines).toEqual([
      'r_total{endpoint="/v1/chat/completions",model="discovered-0"} 1',
      'r_total{endpoint="/v1/chat/completions",model="discovered-1"} 1',
      'r_total{endpoint="/v1/chat/completions",model="discovered-2"} 1',
      'r_total{endpoint="/v1/chat/completions",model="other"} 997',
      'r_total{endpoint="/v1/chat/completions",model="catalog-a"} 1',
    ]);
    expect(h.count({ model: "other" })).toBe(997);
    // Series without the label are not touched.
    c.inc({ endpoint: "/x" });
    expect(c.get({ endpoint: "/x" })).toBe(1);
  });

  test("a route label names its model: capped with it", () => {
    const m = new MetricsRegistry(new LabelCap(1));
    const c = m.counter("a_total", "help");
    c.inc({ route: "first#0", outcome: "ok" });
    c.inc({ route: "first#1", outcome: "ok" });
    c.inc({ route: "second#0", outcome: "ok" });
    c.inc({ route: "third#0", outcome: "ok" });
    expect(m.render().split("\n").filter((l) => l.startsWith("a_total"))).toEqual([
      'a_total{outcome="ok",route="first#0"} 1', 'a_total{outcome="ok",route="first#1"} 1', 'a_total{outcome="ok",route="other"} 2',
    ]);
  });
});
