/**
 * The metrics about the process and the service rather than requests: build info, the standard
 * Prometheus process metrics, and each chat route's circuit-breaker state. Read when /metrics is
 * rendered. Route labels are the route's position ("glm-4.6#0"), never an upstream's name or host.
 */
import { readdirSync } from "node:fs";
import { COMMIT, ONNXRUNTIME_VERSION, VERSION } from "../version";
import type { MetricsRegistry, Sample } from "./registry";
import type { Catalog } from "../catalog/catalog";
import type { RouteRegistry } from "../upstream/registry";
import { OTHER } from "./label-cap";

/** Breaker states as gauge values. */
export const BREAKER_VALUE = { closed: 0, "half-open": 1, open: 2 } as const;

/** Open file descriptors (Linux: /proc/self/fd); null where that cannot be read. */
function openFds(): number | null {
  try {
    // The listing's own descriptor is one of the entries.
    return readdirSync("/proc/self/fd").length - 1;
  } catch {
    return null;
  }
}

/** What the service metrics are read from: the chat models and their routes' breakers. */
export interface ServiceMetricSources {
  metrics: MetricsRegistry;
  catalog: Pick<Catalog, "all">;
  routes: Pick<RouteRegistry, "snapshot">;
}

export function registerServiceMetrics(s: ServiceMetricSources): void {
  const m = s.metrics;
  const build = { version: VERSION, commit: COMMIT, bun: Bun.version, onnxruntime: ONNXRUNTIME_VERSION };
  m.collected("switchyard_build_info", "The running build: version, commit, Bun and ONNX Runtime versions (always 1).", "gauge", () => [{ labels: build, value: 1 }]);
  const startSeconds = Math.round((Date.now() - process.uptime() * 1000) / 10) / 100;
  m.collected("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", "gauge", () => [{ labels: {}, value: startSeconds }]);
  m.collected("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", () => [{ labels: {}, value: process.memoryUsage.rss() }]);
  m.collected("process_cpu_seconds_total", "Total user and system CPU time spent, in seconds.", "counter", () => {
    const u = process.cpuUsage();
    return [{ labels: {}, value: (u.user + u.system) / 1e6 }];
  });
  m.collected("process_open_fds", "Number of open file descriptors.", "gauge", () => {
    const n = openFds();
    return n === null ? [] : [{ labels: {}, value: n }];
  });
  m.collected("switchyard_upstream_breaker_state", "Circuit breaker of each chat route: 0 closed, 1 half-open, 2 open. route is the model and the route's position; models past the series cap share one model=\"other\" series (the worst state).", "gauge", () => {
    const ids = s.catalog.all().filter((e) => e.kind === "chat").map((e) => e.id);
    const out: Sample[] = [];
    let other: number | null = null;
    for (const r of s.routes.snapshot?.(ids) ?? []) {
      const value = BREAKER_VALUE[r.state];
      // Models with series of their own (catalog models, and discovered ones that took a place
      // in the cap); the rest would make one series per id an upstream ever listed.
      if (m.labelCap === null || m.labelCap.has(r.model)) out.push({ labels: { model: r.model, route: r.route }, value });
      else other = Math.max(other ?? 0, value);
    }
    if (other !== null) out.push({ labels: { model: OTHER, route: OTHER }, value: other });
    return out;
  });
}
