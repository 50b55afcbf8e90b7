/**
 * Where the gateway's CPU goes, stage by stage, from a Bun --cpu-prof profile taken under the
 * hot-path benchmark's load (test/bench/hotpath.bench.ts --profile ...).
 *
 * Each sample of the main thread is charged to the innermost frame of the stack that belongs to a
 * stage (native code such as JSON.parse, fetch() or SQLite counts for the code that called it);
 * a stage's share of the samples in the measured windows, times the main thread's CPU per request
 * (from /proc, of an unprofiled gateway under the same load), gives its µs per request. Samples with no frame of ours are Bun itself: its HTTP
 * server, socket writes and promise jobs. The other threads (fetch's HTTP client, JIT, GC, the
 * thread pool doing fsyncs) are listed from /proc.
 */
import { readFileSync } from "node:fs";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

type Rule = [stage: string, match: (path: string, f: CallFrame) => boolean];
const under = (...prefixes: string[]) => (path: string) => prefixes.some((p) => path.startsWith(p));

const NATIVE = "Bun runtime, no frame of ours (HTTP server, socket writes, promise jobs)";
const ELYSIA = "Elysia lifecycle + response mapping";
const SERIALISE = "response serialisation (Response.json of the reply)";
const PIPELINE = "chat pipeline glue";
const REPLY = "reply parse + rewrite (JSON, SSE)";
/** Native leaves worth their own line, by the stage their caller belongs to. */
const LEAF_STAGES: Record<string, Record<string, string>> = {
  json: { [ELYSIA]: SERIALISE },
  toJSON: { [ELYSIA]: SERIALISE },
  stringify: { [ELYSIA]: SERIALISE },
  parse: { [PIPELINE]: REPLY },
};
const ORDER_AFTER: Record<string, string> = { [SERIALISE]: ELYSIA };

/** Stages, in the order the table lists them; a frame belongs to the first rule it matches. */
export const STAGE_RULES: Rule[] = [
  ["JSON request log", under("src/log.ts")],
  ["metrics (counters, histograms, engine clock)", under("src/metrics/")],
  ["request context + our lifecycle hooks", under("src/http/request-lifecycle.ts", "src/http/request-context.ts")],
  ["auth (key → account, cached)", under("src/http/auth.ts", "src/accounts/")],
  ["limits (rate + concurrency, rate headers)", under("src/limits/", "src/http/limits-hook.ts")],
  // TypeBox's compiled checkers are functions named "check" without a file.
  ["validation + token budget", (p, f) => under("src/validate.ts", "src/chat/request.ts", "src/tokens/tokens.ts", "node_modules/@sinclair/typebox/")(p) || (f.url === "" && f.functionName === "check")],
  ["catalog + routing", under("src/catalog/", "src/upstream/registry.ts", "src/upstream/select.ts", "src/upstream/breaker.ts")],
  ["ledger: hold, settle (billing/)", under("src/billing/")],
  // The SQLite statements run inside the group commit's batch; the fsync is on the thread pool.
  ["ledger store: SQLite batch (group commit)", under("src/store/sqlite/ledger-store.ts", "src/store/sqlite/group-commit.ts", "src/store/sqlite/responses.ts")],
  ["generation outcomes (batched rows)", under("src/generations/", "src/store/sqlite/outcomes.ts")],
  ["other store reads (key and account changes)", under("src/store/")],
  ["timeouts + upstream body reads", under("src/upstream/http1/idle-reader.ts", "src/upstream/http1/body.ts")],
  ["upstream request (fetch)", under("src/upstream/client.ts", "src/upstream/dispatch.ts")],
  [REPLY, under("src/chat/rewrite.ts", "src/chat/stream.ts", "src/chat/upstream-shape.ts", "src/protocols/")],
  [PIPELINE, under("src/chat/")],
  ["response + SSE relay", under("src/http/chat-route.ts", "src/chat/relay.ts", "src/metering/metered-stream.ts", "src/metering/producer-stream.ts")],
  ["request body read + JSON parse", (p, f) => p.startsWith("src/http/body.ts") || (p.startsWith("src/http/app.ts") && /parse/i.test(f.functionName))],
  ["app hooks (request id, error mapping)", under("src/http/app.ts", "src/http/errors.ts", "src/errors.ts")],
  ["route handler", under("src/http/routes/")],
  // Elysia compiles its handlers with new Function: those frames have no file but a line number.
  [ELYSIA, (p, f) => p.startsWith("node_modules/elysia/") || (f.url === "" && f.lineNumber > 0)],
];

export interface StageOptions {
  /** The measured windows, in epoch milliseconds: start-up, warm-up and shutdown are left out. */
  windows: { fromMs: number; toMs: number }[];
  /** The checkout the profiled gateway ran from (its files are what the stage rules name). */
  root: string;
  /** CPU µs per request of each thread of the gateway, by name ("main" = the JS thread). */
  threads: Map<string, number>;
}

export function stageShares(file: string, windows: { fromMs: number; toMs: number }[], root: string): { shares: Map<string, number>; samples: number } {
  const prefix = root.endsWith("/") ? root : root + "/";
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stageOfNode = new Map<number, string>();
  const classify = (id: number): string => {
    const hit = stageOfNode.get(id);
    if (hit) return hit;
    let stage = NATIVE;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      const url = f.url.startsWith("file://") ? f.url.slice(7) : f.url;
      const path = url.startsWith(prefix) ? url.slice(prefix.length) : url;
      const rule = STAGE_RULES.find(([, match]) => match(path, f));
      if (rule) {
        stage = rule[0];
        break;
      }
    }
    const leaf = byId.get(id)!.callFrame;
    if (leaf.url === "") stage = LEAF_STAGES[leaf.functionName]?.[stage] ?? stage;
    stageOfNode.set(id, stage);
    return stage;
  };
  const counts = new Map<string, number>();
  let t = profile.startTime;
  let n = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (!windows.some((w) => t >= w.fromMs * 1000 && t <= w.toMs * 1000)) continue;
    const stage = classify(profile.samples[i]!);
    counts.set(stage, (counts.get(stage) ?? 0) + 1);
    n++;
  }
  return { shares: new Map([...counts].map(([k, v]) => [k, v / n])), samples: n };
}

const THREAD_NAMES: [RegExp, string][] = [
  [/^HTTP Client/, "fetch's HTTP client thread (upstream request and reply I/O)"],
  [/^Bun Pool/, "thread pool (WAL fsync, file writes)"],
  [/JIT|WarmUp/i, "JIT compiler threads"],
  [/Heap|GC|scavenger/i, "GC and allocator threads"],
];

export function printStageTable(file: string, o: StageOptions): void {
  const { shares, samples } = stageShares(file, o.windows, o.root);
  const main = o.threads.get("main") ?? 0;
  let total = 0;
  for (const v of o.threads.values()) total += v;
  console.log(`profile: ${file}, ${samples} main-thread samples in the measured window`);
  console.log("");
  console.log("| where | µs/request | share |");
  console.log("|---|---:|---:|");
  const row = (name: string, us: number) => console.log(`| ${name} | ${us.toFixed(1)} | ${((us / total) * 100).toFixed(0)}% |`);
  const stages: string[] = [];
  for (const [stage] of STAGE_RULES) {
    stages.push(stage);
    for (const [extra, after] of Object.entries(ORDER_AFTER)) if (after === stage) stages.push(extra);
  }
  for (const stage of [...stages, NATIVE]) row(`main: ${stage}`, (shares.get(stage) ?? 0) * main);
  const others = new Map<string, number>();
  for (const [name, us] of o.threads) {
    if (name === "main") continue;
    const label = THREAD_NAMES.find(([re]) => re.test(name))?.[1] ?? `other threads (${name})`;
    others.set(label, (others.get(label) ?? 0) + us);
  }
  for (const [label, us] of others) row(label, us);
  console.log(`| **total (main thread ${main.toFixed(0)})** | **${total.toFixed(0)}** | |`);
}
