/**
 * A closed-loop load generator: `concurrency` workers each send one request at a time until
 * `total` requests were sent; the whole body is read before a request counts as done.
 */
export interface LoadSpec {
  url: string;
  headers?: Record<string, string>;
  body: string;
  total: number;
  concurrency: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  /** First non-2xx status or exception text, to show why errors happened. */
  firstError: string | null;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** Every request's latency in ms, sorted. */
  latencies: number[];
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let sent = 0;
  let errors = 0;
  let firstError: string | null = null;
  const headers = { "content-type": "application/json", ...spec.headers };
  const worker = async () => {
    while (sent < spec.total) {
      sent++;
      const t0 = performance.now();
      try {
        const res = await fetch(spec.url, { method: "POST", headers, body: spec.body });
        const text = await res.text();
        if (!res.ok) {
          errors++;
          firstError ??= `${res.status} ${text.slice(0, 200)}`;
        }
      } catch (e) {
        errors++;
        firstError ??= String(e);
      }
      latencies.push(performance.now() - t0);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    firstError,
    seconds,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    latencies,
  };
}

export const fmt = (n: number, digits = 1) => n.toFixed(digits);

/** The median of some numbers (NaN for none). */
export function median(xs: number[]): number {
  return percentile([...xs].sort((a, b) => a - b), 50);
}

/**
 * CPU seconds a process has used so far (Linux; null elsewhere): the sum over its threads of the
 * nanosecond run time in /proc/<pid>/task/<tid>/schedstat, since /proc/<pid>/stat counts in 10 ms
 * ticks, too coarse for a few thousand requests of 100 µs. (Bun's threads live as long as the
 * process, so none of their time is lost between two readings.) Falls back to /proc/<pid>/stat.
 */
export async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    let ns = 0;
    for await (const tid of new Bun.Glob("*").scan({ cwd: `/proc/${pid}/task`, onlyFiles: false })) {
      const text = await Bun.file(`/proc/${pid}/task/${tid}/schedstat`).text().catch(() => "0");
      ns += Number(text.split(" ")[0]);
    }
    if (ns > 0) return ns / 1e9;
  } catch {
    // No per-thread schedstat here: use the process's tick counts.
  }
  try {
    const stat = await Bun.file(`/proc/${pid}/stat`).text();
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the full line (11 and 12 after the command name).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** CPU seconds per thread of a process, summed by thread name, the main thread as "main" (Linux /proc; empty elsewhere). */
export async function threadCpuSeconds(pid: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = (await Array.fromAsync(new Bun.Glob("*").scan({ cwd: `/proc/${pid}/task`, onlyFiles: false }))) as string[];
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = tid === String(pid) ? "main" : (await Bun.file(`/proc/${pid}/task/${tid}/comm`).text()).trim();
      const ns = Number((await Bun.file(`/proc/${pid}/task/${tid}/schedstat`).text()).split(" ")[0]);
      out.set(name, (out.get(name) ?? 0) + ns / 1e9);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}
