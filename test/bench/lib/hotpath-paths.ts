/**
 * The paths the hot-path benchmark (test/bench/hotpath.bench.ts) sends its load through — direct,
 * nginx, the bare proxy, Switchyard — and what it does to them besides measuring: checks that each
 * answers as it should, warms each until its JIT compiler is quiet, and reads each Switchyard's
 * ledger and request log afterwards. The measuring and the tables stay in the benchmark.
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { threadCpuSeconds } from "./load";
import { ledgerFacts } from "./ledger-facts";
import type { Proc } from "./processes";

export interface Mode {
  key: "plain" | "streamed" | "paced";
  label: string;
  stream: boolean;
  /** Path prefix on the upstream (and the bare proxy, which forwards paths as they are). */
  prefix: string;
  /** The model Switchyard routes to that prefix (SWITCHYARD_ROUTES in hotpath.bench.ts). */
  model: string;
  requests: number;
}

export interface Target {
  name: string;
  /** The process whose CPU is the cost of this path (null: direct, nothing in between). */
  proc: Proc | null;
  /** A Switchyard: its data directory and account, for the ledger check and its log. */
  gateway?: { dataDir: string; accountId: string; requests: number };
  url(m: Mode): string;
  headers: Record<string, string>;
  /** The model a client names on this path. */
  model(m: Mode): string;
  /** Replies pass through untouched (the upstream's own model name). */
  passthrough?: boolean;
}

/** A chat completion request for `model`. */
export const body = (model: string, stream: boolean) =>
  JSON.stringify({ model, messages: [{ role: "user", content: "Say hello in one short sentence." }], max_tokens: 64, stream });

/** Where a Switchyard started by the benchmark writes its log (under its data directory). */
export const logFile = (dir: string) => join(dir, "gateway.log");

/** When warm-up starts measuring (`from` requests per mode already sent) and when it stops. */
export interface WarmUp {
  from: number;
  max: number;
  /** JIT threads' CPU per request below which a path counts as warm. */
  quietUs: number;
}

/**
 * Warms every proxying path until its JIT compiler threads are quiet: slices of `slice` requests
 * of each mode until the JIT threads used less than `quietUs` per request over the last slice
 * (or `max` requests per mode). Returns the warm-up requests each path took, per mode.
 */
export async function warmUntilQuiet(
  ts: Target[],
  selected: Mode[],
  run: (t: Target, m: Mode, n: number) => Promise<unknown>,
  { from, max, quietUs }: WarmUp,
): Promise<Map<string, number>> {
  const slice = 2000;
  const taken = new Map<string, number>();
  for (const t of ts) {
    let n = from;
    for (; n < max; n += slice) {
      const before = jitSeconds(await threadCpuSeconds(t.proc!.proc.pid));
      for (const m of selected) await run(t, m, slice);
      const perRequest = ((jitSeconds(await threadCpuSeconds(t.proc!.proc.pid)) - before) * 1e6) / (slice * selected.length);
      if (perRequest < quietUs) break;
    }
    taken.set(t.name, n);
  }
  return taken;
}

function jitSeconds(threads: Map<string, number>): number {
  let s = 0;
  for (const [name, sec] of threads) if (/JIT|WarmUp/i.test(name)) s += sec;
  return s;
}

/** Every gateway request charged exactly once, nothing left held, and the books balance. */
export function checkLedger(t: Target): void {
  const g = t.gateway!;
  const ledger = ledgerFacts(g.dataDir, g.accountId);
  const exact = ledger.sum === ledger.balance;
  console.log(`${t.name} billing: ${ledger.charges} charge entries for ${g.requests} requests; pending holds ${ledger.pendingHolds}; ledger sum equals balance: ${exact}`);
  if (ledger.charges !== g.requests || ledger.pendingHolds !== 0 || !exact) process.exitCode = 1;
}

/** The request lines of a gateway's JSON log. */
export function logLines(dataDir: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of readFileSync(logFile(dataDir), "utf8").split("\n")) {
    if (!line.includes('"msg":"request"')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // A line cut short at shutdown.
    }
  }
  return out;
}

/**
 * One request of each kind through a path: a completion naming the model asked for, and a stream
 * with every content chunk and [DONE] (and, through Switchyard, nothing of the upstream's).
 */
export async function checkReplies(t: Target, selected: Mode[], streamChunks: number): Promise<void> {
  const rewritten = t.gateway !== undefined;
  for (const m of selected) {
    const res = await fetch(t.url(m), { method: "POST", headers: { "content-type": "application/json", ...t.headers }, body: body(t.model(m), m.stream) });
    if (t.gateway) t.gateway.requests++;
    const text = await res.text();
    if (!res.ok) throw new Error(`${t.name} (${m.label}): ${res.status} ${text.slice(0, 300)}`);
    const model = t.passthrough ? "upstream-model" : t.model(m);
    if (!m.stream) {
      if (!text.includes(`"model":"${model}"`) || !text.includes('"choices"')) throw new Error(`${t.name}: unexpected reply ${text.slice(0, 300)}`);
      continue;
    }
    const chunks = text.split("\n\n").filter((e) => e.includes('"content":" tok"') || e.includes('"content":"Hello"')).length;
    if (chunks !== streamChunks || !text.includes("data: [DONE]") || (rewritten && text.includes("upstream"))) {
      throw new Error(`${t.name} (${m.label}): stream had ${chunks} content chunks:\n${text.slice(0, 500)}`);
    }
  }
}
