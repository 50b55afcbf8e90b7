/**
 * The hot path: what the gateway costs per request next to the floor this runtime allows, all in
 * one run. Five processes: a fast fake upstream (replies encoded once, test/bench/lib/fast-upstream.ts),
 * a bare Bun.serve proxy doing the same fetch and JSON rewrite (test/bench/lib/bare-proxy.ts),
 * Switchyard (billing, limits, metrics and the info-level request log all on; the log goes to a
 * file), and this load generator. The paths and what is checked of them (replies, warm-up, the
 * ledger, the request log): test/bench/lib/hotpath-paths.ts.
 *
 *   1. CPU µs per request of the proxying process (run time of all its threads, from /proc)
 *      and req/s, for: direct to the upstream, the bare proxy, Switchyard; plain, streamed (20
 *      content chunks sent back to back) and streamed paced (1 ms between chunks, so every chunk
 *      is its own read, as from a real engine). Rounds are interleaved (the order of the paths
 *      rotates each round) and medians reported, so noise from other work hits every path alike.
 *   2. Added latency over direct with a 50 ms upstream at concurrency 64, plain and streamed
 *      (p50/p99 of whole-body latency, pooled over interleaved rounds); and the same one request
 *      at a time (concurrency 1), which leaves out queueing: what the path itself adds.
 *   3. The ledger afterwards: one charge per gateway request, no pending hold, sum = balance.
 *
 *   BENCH_REQUESTS (3000 per round and path; paced: half)  BENCH_CONCURRENCY (32)  BENCH_ROUNDS (5)
 *   BENCH_LATENCY_REQUESTS (1024)  BENCH_LATENCY_ROUNDS (3)  BENCH_DELAY_MS (50)  BENCH_SERIAL_REQUESTS (40)
 *   BENCH_WARMUP (3000)  BENCH_WARMUP_MAX (40000)  BENCH_MODES (plain,streamed,paced)
 *
 * Warm-up: every path takes BENCH_WARMUP requests of each mode, then more, a slice at a time, until
 * its JIT compiler threads are quiet (under JIT_QUIET_US per request over the last slice) or it has
 * taken BENCH_WARMUP_MAX: JavaScriptCore keeps compiling a gateway's code for some 15,000 requests,
 * and that one-time cost is not what a request costs a running server.
 *   BENCH_BASELINE (a directory): also runs the Switchyard checked out there (with its own
 *     node_modules), as one more path of every round: before/after figures under the same noise.
 *
 * Profile mode: `bun test/bench/hotpath.bench.ts --profile plain|streamed|paced` runs only
 * Switchyard under the same load with Bun's CPU profiler on, then prints where its time went,
 * stage by stage (test/bench/lib/profile-stages.ts; the table in test/bench/README.md). With
 * BENCH_BASELINE set, these two modes look into that checkout instead of this one.
 */
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { readdirSync, readFileSync } from "node:fs";
import { benchAccount, ROOT, startGatewayProcess, startScriptProcess, type Proc } from "./lib/processes";
import { cpuSeconds, fmt, median, percentile, runLoad, threadCpuSeconds, type LoadResult } from "./lib/load";
import { body, checkLedger, checkReplies, logFile, logLines, warmUntilQuiet, type Mode, type Target } from "./lib/hotpath-paths";
import { printStageTable } from "./lib/profile-stages";
import { nginxBinary, startNginxProxy } from "./lib/nginx-proxy";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LAT_REQUESTS = Number(process.env.BENCH_LATENCY_REQUESTS ?? 1024);
const LAT_ROUNDS = Number(process.env.BENCH_LATENCY_ROUNDS ?? 3);
const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 50);
const LAT_CONCURRENCY = 64;
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3000);
const WARMUP_MAX = Number(process.env.BENCH_WARMUP_MAX ?? 40_000);
/** JIT threads' CPU per request below which a path counts as warm. */
const JIT_QUIET_US = 3;
const SERIAL_REQUESTS = Number(process.env.BENCH_SERIAL_REQUESTS ?? 40);
const STREAM_CHUNKS = 20;
const PACE_MS = 1;
/** Warm-up: BENCH_WARMUP requests per mode first, then slices until the JIT threads are quiet. */
const WARM_UP = { from: WARMUP, max: WARMUP_MAX, quietUs: JIT_QUIET_US };

const MODES: Mode[] = [
  { key: "plain", label: "plain", stream: false, prefix: "", model: "glm-4.6", requests: REQUESTS },
  { key: "streamed", label: "streamed", stream: true, prefix: "", model: "glm-4.6", requests: REQUESTS },
  { key: "paced", label: `streamed, ${PACE_MS} ms apart`, stream: true, prefix: `/pace${PACE_MS}`, model: "kimi-k2-instruct", requests: Math.ceil(REQUESTS / 2) },
];
/** Models Switchyard routes to the slow upstream: one for plain calls, one for streams (told apart in its log). */
const SLOW = { prefix: `/delay${DELAY_MS}`, plainModel: "minimax-m2", streamModel: "minimax-m1" };
const LATENCY_MODES: Mode[] = [
  { key: "plain", label: "plain", stream: false, prefix: SLOW.prefix, model: SLOW.plainModel, requests: LAT_REQUESTS },
  { key: "streamed", label: "streamed", stream: true, prefix: SLOW.prefix, model: SLOW.streamModel, requests: LAT_REQUESTS },
];
/** Another checkout of Switchyard (its node_modules included) to measure beside this one, in the same run. */
const BASELINE = process.env.BENCH_BASELINE ?? null;

/** --profile <mode>: Switchyard alone, under Bun's CPU profiler; --threads <mode>: the same, no profiler. */
const profileArg = Math.max(process.argv.indexOf("--profile"), process.argv.indexOf("--threads"));
const PROFILER = process.argv.includes("--profile");
const PROFILE = profileArg >= 0 ? MODES.find((m) => m.key === (process.argv[profileArg + 1] ?? "plain")) : undefined;
if (profileArg >= 0 && !PROFILE) throw new Error(`${process.argv[profileArg]} takes one of ${MODES.map((m) => m.key).join(", ")}`);
const selected = PROFILE ? [PROFILE] : MODES.filter((m) => (process.env.BENCH_MODES ?? "plain,streamed,paced").split(",").includes(m.key));
const PROFILE_DIR = join(import.meta.dir, "../.tmp/profiles");

/** Everything started, stopped in reverse order at the end (or when a later start fails). */
const started: Proc[] = [];
async function stopAll(): Promise<void> {
  for (const p of started.reverse()) await p.stop().catch(() => {});
}
process.on("SIGINT", () => void stopAll().then(() => process.exit(130)));
async function track<P extends Proc>(p: Promise<P>): Promise<P> {
  try {
    const x = await p;
    started.push(x);
    return x;
  } catch (e) {
    await stopAll();
    throw e;
  }
}

const upstream = await track(startScriptProcess(join(import.meta.dir, "lib/fast-upstream.ts"), { BENCH_STREAM_CHUNKS: String(STREAM_CHUNKS) }));
const bare = PROFILE ? null : await track(startScriptProcess(join(import.meta.dir, "lib/bare-proxy.ts"), { BARE_PROXY_UPSTREAM: upstream.url }));
/** nginx as a second reference proxy, where one is installed (BENCH_NGINX=off leaves it out). */
const NGINX = PROFILE || process.env.BENCH_NGINX === "off" ? null : nginxBinary();
const nginx = NGINX ? await track(startNginxProxy(NGINX, upstream.url)) : null;
const GATEWAY_ENV = {
  SWITCHYARD_UPSTREAM_URL: `${upstream.url}/v1`,
  SWITCHYARD_ROUTES: JSON.stringify({
    upstreams: { slow: { base_url: `${upstream.url}${SLOW.prefix}/v1` }, paced: { base_url: `${upstream.url}${MODES[2]!.prefix}/v1` } },
    models: { [SLOW.plainModel]: [{ upstream: "slow" }], [SLOW.streamModel]: [{ upstream: "slow" }], [MODES[2]!.model]: [{ upstream: "paced" }] },
  }),
  // Limits are checked on every request but never reached: one account sends everything.
  SWITCHYARD_RATE_LIMIT_RPM: "10000000",
  SWITCHYARD_CONCURRENCY_LIMIT: "100000",
  SWITCHYARD_LOG_LEVEL: "info",
};
/** With --profile or --threads, BENCH_BASELINE says which checkout to look into (default: this one). */
const GATEWAY_ROOT = PROFILE ? (BASELINE ?? ROOT) : ROOT;
const gateway = await track(
  startGatewayProcess(GATEWAY_ENV, { logFile, root: GATEWAY_ROOT, args: PROFILER ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`, "--cpu-prof-interval=500"] : [] }),
);
const baseline = BASELINE && !PROFILE ? await track(startGatewayProcess(GATEWAY_ENV, { logFile, root: BASELINE })) : null;
/**
 * Profile mode: the profiler slows its process down and skews /proc, so a second, unprofiled
 * Switchyard takes the same load, interleaved: the profile says where the main thread's time goes,
 * this one how much time there is and what the other threads spend.
 */
const unprofiled = PROFILER ? await track(startGatewayProcess(GATEWAY_ENV, { logFile, root: GATEWAY_ROOT })) : null;

async function switchyardTarget(name: string, g: Proc & { dataDir: string }): Promise<Target> {
  const acct = await benchAccount(g.url, "1000000");
  return {
    name,
    proc: g,
    gateway: { dataDir: g.dataDir, accountId: acct.id, requests: 0 },
    url: () => `${g.url}/v1/chat/completions`,
    headers: { authorization: `Bearer ${acct.key}` },
    model: (m) => m.model,
  };
}

try {
  const targets: Target[] = [
    { name: "direct", proc: null, url: (m) => `${upstream.url}${m.prefix}/v1/chat/completions`, headers: {}, model: () => "glm-4.6", passthrough: true },
    ...(nginx ? [{ name: "nginx", proc: nginx, url: (m: Mode) => `${nginx.url}${m.prefix}/v1/chat/completions`, headers: {}, model: () => "glm-4.6", passthrough: true }] : []),
    ...(bare ? [{ name: "bare Bun.serve proxy", proc: bare, url: (m: Mode) => `${bare.url}${m.prefix}/v1/chat/completions`, headers: {}, model: () => "glm-4.6" }] : []),
    ...(baseline ? [await switchyardTarget("Switchyard baseline", baseline)] : []),
    await switchyardTarget("Switchyard", gateway),
  ];
  const sy = targets[targets.length - 1]!;
  const load = async (t: Target, m: Mode, total: number, concurrency: number): Promise<LoadResult> => {
    const r = await runLoad({ url: t.url(m), body: body(t.model(m), m.stream), headers: t.headers, total, concurrency });
    if (t.gateway) t.gateway.requests += total;
    if (r.errors > 0) throw new Error(`${t.name} (${m.label}): ${r.errors} errors, first: ${r.firstError}`);
    return r;
  };

  for (const t of targets) await checkReplies(t, selected, STREAM_CHUNKS);

  if (PROFILE) {
    const plainSy = unprofiled ? await switchyardTarget("Switchyard (unprofiled)", unprofiled) : sy;
    const measured = plainSy.proc!.proc.pid;
    await load(sy, PROFILE, WARMUP, CONCURRENCY);
    if (plainSy !== sy) await load(plainSy, PROFILE, WARMUP, CONCURRENCY);
    const warmed = await warmUntilQuiet(plainSy !== sy ? [sy, plainSy] : [sy], selected, (t, m, n) => load(t, m, n, CONCURRENCY), WARM_UP);
    console.log(`warm-up until the JIT threads were quiet: ${[...warmed].map(([name, n]) => `${name} ${n}`).join(", ")} requests`);
    // For attaching an outside profiler (perf record -p) to the measured run.
    console.log(`gateway pid ${measured}: measuring`);
    const windows: { fromMs: number; toMs: number }[] = [];
    let before = new Map<string, number>();
    const threads = new Map<string, number>();
    let rps = 0;
    for (let round = 0; round < ROUNDS; round++) {
      if (plainSy !== sy) {
        const fromMs = Date.now();
        await load(sy, PROFILE, PROFILE.requests, CONCURRENCY);
        windows.push({ fromMs, toMs: Date.now() });
      }
      before = await threadCpuSeconds(measured);
      const r = await load(plainSy, PROFILE, PROFILE.requests, CONCURRENCY);
      rps += r.rps / ROUNDS;
      for (const [name, sec] of await threadCpuSeconds(measured)) {
        threads.set(name, (threads.get(name) ?? 0) + ((sec - (before.get(name) ?? 0)) * 1e6) / (PROFILE.requests * ROUNDS));
      }
      if (plainSy === sy) windows.push({ fromMs: 0, toMs: Number.MAX_SAFE_INTEGER });
    }
    checkLedger(sy);
    if (plainSy !== sy) checkLedger(plainSy);
    await gateway.stop();
    console.log(`\n${ROUNDS} rounds of ${PROFILE.requests} ${PROFILE.label} requests at concurrency ${CONCURRENCY}: ${fmt(rps, 0)} req/s unprofiled`);
    if (PROFILER) {
      const newest = readdirSync(PROFILE_DIR).filter((f) => f.endsWith(".cpuprofile")).sort().pop()!;
      printStageTable(join(PROFILE_DIR, newest), { windows, threads, root: GATEWAY_ROOT });
    } else {
      console.log("CPU µs per request by gateway thread:");
      for (const [name, us] of threads) if (us > 0) console.log(`  ${name}: ${fmt(us, 1)}`);
    }
  } else {
    for (const t of targets) for (const m of selected) await load(t, m, WARMUP, CONCURRENCY);
    const warmed = await warmUntilQuiet(targets.filter((t) => t.proc !== null), selected, (t, m, n) => load(t, m, n, CONCURRENCY), WARM_UP);

    // 1. CPU per request and throughput.
    type Sample = { cpu: number | null; upstreamCpu: number | null; clientCpu: number; rps: number };
    const samples = new Map<string, Sample[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const m of selected) {
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(k + round) % targets.length]!;
          const p0 = t.proc ? await cpuSeconds(t.proc.proc.pid) : null;
          const u0 = await cpuSeconds(upstream.proc.pid);
          const c0 = process.cpuUsage();
          const r = await load(t, m, m.requests, CONCURRENCY);
          const c1 = process.cpuUsage(c0);
          const p1 = t.proc ? await cpuSeconds(t.proc.proc.pid) : null;
          const u1 = await cpuSeconds(upstream.proc.pid);
          const per = (a: number | null, b: number | null) => (a === null || b === null ? null : ((b - a) * 1e6) / r.requests);
          const key = `${m.key}|${t.name}`;
          samples.set(key, [...(samples.get(key) ?? []), { cpu: per(p0, p1), upstreamCpu: per(u0, u1), clientCpu: (c1.user + c1.system) / r.requests, rps: r.rps }]);
        }
      }
    }

    // 2. Added latency over direct with a slow upstream.
    const latencies = new Map<string, number[]>();
    for (const t of targets) for (const m of LATENCY_MODES) await load(t, m, LAT_CONCURRENCY * 2, LAT_CONCURRENCY);
    for (let round = 0; round < LAT_ROUNDS; round++) {
      for (const m of LATENCY_MODES) {
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(k + round) % targets.length]!;
          const r = await load(t, m, m.requests, LAT_CONCURRENCY);
          const key = `${m.key}|${t.name}`;
          latencies.set(key, [...(latencies.get(key) ?? []), ...r.latencies]);
        }
      }
    }

    // 3. The same, one request at a time: no queueing, only what the path adds.
    const serial = new Map<string, number[]>();
    for (let round = 0; round < 2 && SERIAL_REQUESTS > 0; round++) {
      for (const m of LATENCY_MODES) {
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(k + round) % targets.length]!;
          const r = await load(t, { ...m, requests: SERIAL_REQUESTS }, SERIAL_REQUESTS, 1);
          const key = `${m.key}|${t.name}`;
          serial.set(key, [...(serial.get(key) ?? []), ...r.latencies]);
        }
      }
    }

    console.log(`\n## hot path (${new Date().toISOString()}, Bun ${Bun.version}, ${availableParallelism()} CPUs, load average ${loadAverage()})`);
    console.log(
      `${ROUNDS} interleaved rounds per path at concurrency ${CONCURRENCY}, medians shown; streamed = ${STREAM_CHUNKS} content chunks. ` +
        `Switchyard: billing, limits, metrics and the info request log on.`,
    );
    console.log("");
    console.log(`Warm-up until the JIT threads were quiet: ${[...warmed].map(([name, n]) => `${name} ${n}`).join(", ")} requests per mode.`);
    console.log("");
    console.log("| mode | path | CPU µs/req (proxy process) | req/s | × bare CPU | × nginx CPU | × direct req/s | upstream µs/req | client µs/req |");
    console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    const med = (xs: (number | null)[]) => (xs.some((x) => x === null) ? null : median(xs as number[]));
    const stat = (m: Mode, name: string) => {
      const ss = samples.get(`${m.key}|${name}`) ?? [];
      return { cpu: med(ss.map((s) => s.cpu)), rps: median(ss.map((s) => s.rps)), up: med(ss.map((s) => s.upstreamCpu)), client: median(ss.map((s) => s.clientCpu)) };
    };
    const us = (n: number | null) => (n === null ? "-" : fmt(n, 0));
    for (const m of selected) {
      const d = stat(m, "direct");
      const b = stat(m, "bare Bun.serve proxy");
      const ng = stat(m, "nginx");
      for (const t of targets) {
        const x = stat(m, t.name);
        const ratio = (ref: { cpu: number | null }) => (x.cpu !== null && ref.cpu !== null ? fmt(x.cpu / ref.cpu, 2) : "-");
        console.log(`| ${m.label} | ${t.name} | ${us(x.cpu)} | ${fmt(x.rps, 0)} | ${ratio(b)} | ${ratio(ng)} | ${fmt(x.rps / d.rps, 2)} | ${us(x.up)} | ${us(x.client)} |`);
      }
    }
    if (baseline) {
      for (const m of selected) {
        const now = stat(m, "Switchyard").cpu;
        const before = stat(m, "Switchyard baseline").cpu;
        if (now !== null && before !== null) console.log(`${m.label}: Switchyard uses ${fmt(now / before, 2)}x the CPU per request of the baseline (${BASELINE})`);
      }
    }
    console.log("");
    console.log(`Added latency over direct, upstream answering after ${DELAY_MS} ms, concurrency ${LAT_CONCURRENCY}, ${LAT_ROUNDS} interleaved rounds of ${LAT_REQUESTS}:`);
    console.log("");
    console.log("| mode | path | p50 ms | p99 ms | added p50 ms | added p99 ms |");
    console.log("|---|---|---:|---:|---:|---:|");
    const pct = (m: Mode, name: string, p: number) => percentile((latencies.get(`${m.key}|${name}`) ?? []).sort((a, b) => a - b), p);
    for (const m of LATENCY_MODES) {
      for (const t of targets) {
        const added = (p: number) => (t.name === "direct" ? "-" : fmt(pct(m, t.name, p) - pct(m, "direct", p), 2));
        console.log(`| ${m.label} | ${t.name} | ${fmt(pct(m, t.name, 50), 2)} | ${fmt(pct(m, t.name, 99), 2)} | ${added(50)} | ${added(99)} |`);
      }
    }
    if (SERIAL_REQUESTS > 0) {
      console.log("");
      console.log(`The same one request at a time (concurrency 1, 2 interleaved rounds of ${SERIAL_REQUESTS}): what the path adds without queueing:`);
      console.log("");
      console.log("| mode | path | p50 ms | added p50 ms |");
      console.log("|---|---|---:|---:|");
      const serialP50 = (m: Mode, name: string) => percentile((serial.get(`${m.key}|${name}`) ?? []).sort((a, b) => a - b), 50);
      for (const m of LATENCY_MODES) {
        for (const t of targets) {
          console.log(`| ${m.label} | ${t.name} | ${fmt(serialP50(m, t.name), 2)} | ${t.name === "direct" ? "-" : fmt(serialP50(m, t.name) - serialP50(m, "direct"), 2)} |`);
        }
      }
    }
    const cpuOf = (key: Mode["key"], path = "Switchyard") => {
      const m = selected.find((x) => x.key === key);
      return m ? stat(m, path).cpu : null;
    };
    /** Switchyard's CPU per request over the reference proxy's (nginx where installed, else the bare proxy). */
    const reference = nginx ? "nginx" : "bare Bun.serve proxy";
    const overReference = (key: Mode["key"]) => {
      const [sy, ref] = [cpuOf(key), cpuOf(key, reference)];
      return sy === null || ref === null ? null : sy / ref;
    };
    const addedP50 = (i: number) => pct(LATENCY_MODES[i]!, "Switchyard", 50) - pct(LATENCY_MODES[i]!, "direct", 50);
    console.log("");
    console.log("The slow upstream's requests as the gateways logged them (overhead_ms: request time not spent waiting on the upstream):");
    for (const t of targets) {
      if (!t.gateway) continue;
      const lines = logLines(t.gateway.dataDir);
      for (const m of LATENCY_MODES) {
        const all = lines.filter((l) => l.model === m.model).map((l) => l.overhead_ms as number);
        // The serial requests came last, after the concurrent ones (and their warm-up).
        const xs = all.slice(0, all.length - 2 * SERIAL_REQUESTS).sort((a, b) => a - b);
        const ys = all.slice(all.length - 2 * SERIAL_REQUESTS).sort((a, b) => a - b);
        const serialPart = ys.length > 0 ? `; p50 ${fmt(percentile(ys, 50), 2)} ms one at a time` : "";
        console.log(`  ${t.name}, ${m.label}: overhead p50 ${fmt(percentile(xs, 50), 2)} ms, p99 ${fmt(percentile(xs, 99), 2)} ms over ${xs.length} requests at concurrency ${LAT_CONCURRENCY}${serialPart}`);
      }
    }
    console.log("");
    console.log(
      `targets (issue 30, CPU per request over ${reference}'s): plain ≤ 3.5x: ${verdict(overReference("plain"), 3.5)}; streamed ≤ 2x: ${verdict(overReference("streamed"), 2)}`,
    );
    console.log(
      `targets (issue 15): plain ≤ 60 µs: ${verdict(cpuOf("plain"), 60)}; streamed ≤ 120 µs: ${verdict(cpuOf("streamed"), 120)}; ` +
        `added p50 plain ≤ 1 ms: ${verdict(addedP50(0), 1)}; streamed ≤ 2 ms: ${verdict(addedP50(1), 2)}`,
    );
  }

  if (!PROFILE) for (const t of targets) if (t.gateway) checkLedger(t);
} finally {
  await stopAll();
}

function verdict(value: number | null, limit: number): string {
  return value === null ? "n/a" : `${fmt(value, limit < 10 ? 2 : 0)} ${value <= limit ? "met" : "MISSED"}`;
}

function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "n/a";
  }
}
