/**
 * Closed-loop HTTP load for a fixed time: `wrk` when it is installed (a C client costs the shared
 * machine least), else this benchmark's own client in a child process (fetch loops). Either way
 * the server is another process, so its CPU is measured apart from the client's.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Where in `body` a counter goes, so that every request differs (a text the server has not seen). */
  varyAt?: string;
  concurrency: number;
  seconds: number;
}

/** The body of request number `n`. */
export function bodyOf(spec: LoadSpec, n: number): string {
  return spec.varyAt ? spec.body.replace(spec.varyAt, `${spec.varyAt} ${n}`) : spec.body;
}

export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50ms: number;
  p99ms: number;
}

export const wrkPath = Bun.which("wrk");

export function loadClient(): string {
  return wrkPath ? `wrk (${wrkPath})` : "the benchmark's own fetch client (install wrk for a lighter one)";
}

const luaString = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

function ms(v: string | undefined): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v ?? "");
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "ms" ? n : m[2] === "s" ? n * 1000 : n * 60_000;
}

async function wrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-wrk-"));
  try {
    const lua = join(dir, "post.lua");
    const lines = [`wrk.method = "POST"`, `wrk.body = ${luaString(spec.body)}`, ...Object.entries(spec.headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`)];
    if (spec.varyAt) {
      const at = spec.body.indexOf(spec.varyAt) + spec.varyAt.length;
      // Each wrk thread counts from its own random start, so no two requests carry the same text.
      lines.push(
        `local head, tail = ${luaString(spec.body.slice(0, at))}, ${luaString(spec.body.slice(at))}`,
        `local n = math.random(1, 2000000000)`,
        `request = function() n = n + 1; return wrk.format(nil, nil, nil, head .. " " .. n .. tail) end`,
      );
    }
    writeFileSync(lua, lines.join("\n"));
    const threads = Math.min(2, spec.concurrency);
    // wrk's default 2 s timeout would count a slow model's queued requests as errors.
    const p = Bun.spawn([wrkPath!, `-t${threads}`, `-c${spec.concurrency}`, `-d${Math.max(1, Math.round(spec.seconds))}s`, "--timeout", "120s", "-s", lua, "--latency", spec.url], { stdout: "pipe", stderr: "pipe" });
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
    if (!Number.isFinite(requests)) throw new Error(`wrk said: ${out}${err}`);
    const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0) + Number(/Socket errors:.*?timeout (\d+)/.exec(out)?.[1] ?? 0);
    return { requests, errors, rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]), p50ms: ms(/^\s+50%\s+(\S+)/m.exec(out)?.[1]), p99ms: ms(/^\s+99%\s+(\S+)/m.exec(out)?.[1]) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The fallback client, run in a child process (see ceiling-child.ts "load"). */
export async function fetchLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  let sent = Math.floor(Math.random() * 1e9);
  const deadline = performance.now() + spec.seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < deadline) {
        const start = performance.now();
        try {
          const res = await fetch(spec.url, { method: "POST", headers: spec.headers, body: bodyOf(spec, sent++) });
          await res.arrayBuffer();
          if (!res.ok) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - start);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  return { requests: latencies.length, errors, rps: latencies.length / seconds, p50ms: at(0.5), p99ms: at(0.99) };
}

/**
 * `child` starts this benchmark's child process in a mode, with a JSON argument, and reads its JSON
 * answer. `everyAnswer`: count every request sent, answered after the deadline or not, over the
 * time to the last answer (the fetch client). wrk stops at its deadline and drops the answers in
 * flight; for a server that answers in batches (the real embedding model: 32 answers about once a
 * second at c64) that loses half a batch per cell on average, while the server's CPU for it is
 * still measured, so req/s read 5–10% low and CPU per request as much high. At a few dozen
 * requests a second the fetch client costs the machine next to nothing.
 */
export async function httpLoad(spec: LoadSpec, child: (mode: string, arg: unknown) => Promise<unknown>, everyAnswer = false): Promise<LoadResult> {
  return wrkPath && !everyAnswer ? wrk(spec) : ((await child("load", spec)) as LoadResult);
}
