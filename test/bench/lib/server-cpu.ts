/**
 * CPU time of a server process, all threads, from /proc/<pid>/task/<tid>/schedstat (nanoseconds on
 * a CPU), grouped the way the ceiling benchmark prints it: the event loop, the worker threads
 * (ONNX Runtime's inference worker and its thread pool, the tokenizer threads: Bun names them all
 * "Worker"), the garbage collector and JIT compiler, Bun's thread pool (fsync, file writes), and
 * whatever else. Linux only; elsewhere the figures are missing and the benchmark says so.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";

export interface ThreadTime {
  name: string;
  ns: number;
}

export type CpuSnapshot = Map<number, ThreadTime>;

export const GROUPS = ["event loop", "worker threads", "GC + JIT", "thread pool", "other"] as const;
export type Group = (typeof GROUPS)[number];

export function canMeasureCpu(pid: number): boolean {
  return existsSync(`/proc/${pid}/task`);
}

export function snapshot(pid: number): CpuSnapshot {
  const out: CpuSnapshot = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      out.set(Number(tid), { name, ns });
    } catch {
      // The thread ended between the listing and the read: its time is lost, and small.
    }
  }
  return out;
}

function groupOf(pid: number, tid: number, name: string): Group {
  if (tid === pid) return "event loop";
  if (name === "Worker") return "worker threads";
  if (/Heap|scavenger|JIT|WarmUp|ollector/i.test(name)) return "GC + JIT";
  if (/^Bun Pool/.test(name)) return "thread pool";
  return "other";
}

/** µs of CPU per request between two snapshots, in all and by group. */
export function cpuPerRequest(pid: number, before: CpuSnapshot, after: CpuSnapshot, requests: number): { total: number; groups: Record<Group, number> } {
  const groups = Object.fromEntries(GROUPS.map((g) => [g, 0])) as Record<Group, number>;
  let total = 0;
  for (const [tid, t] of after) {
    const ns = t.ns - (before.get(tid)?.ns ?? 0);
    const us = ns / 1000 / Math.max(1, requests);
    groups[groupOf(pid, tid, t.name)] += us;
    total += us;
  }
  return { total, groups };
}

/** CPU seconds of the whole process between two snapshots. */
export function cpuSeconds(before: CpuSnapshot, after: CpuSnapshot): number {
  let ns = 0;
  for (const [tid, t] of after) ns += t.ns - (before.get(tid)?.ns ?? 0);
  return ns / 1e9;
}

export function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}
