/**
 * Gateway overhead: the same fake upstream hit directly and through Switchyard (auth, validation,
 * hold → settle on the ledger with group commit, model/id rewrite), plain and streamed.
 * Three processes: the fake upstream, the gateway, and this load generator.
 *
 *   BENCH_REQUESTS (2000)  BENCH_CONCURRENCY (32)  BENCH_WARMUP (200)  BENCH_MODES (plain,streamed)
 */
import { availableParallelism } from "node:os";
import { benchAccount, BENCH_ADMIN_TOKEN, startGatewayProcess, startUpstreamProcess } from "./lib/processes";
import { cpuSeconds, fmt, runLoad, type LoadResult, type LoadSpec } from "./lib/load";
import { ledgerFacts } from "./lib/ledger-facts";

const TOTAL = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const MODEL = "glm-4.6";

const upstream = await startUpstreamProcess({});
const gateway = await startGatewayProcess({
  SWITCHYARD_UPSTREAM_URL: upstream.url,
  // Limits are not what is measured here: one account sends everything.
  SWITCHYARD_RATE_LIMIT_RPM: "10000000",
  SWITCHYARD_CONCURRENCY_LIMIT: "100000",
  SWITCHYARD_LOG_LEVEL: "warn",
});

interface Measured extends LoadResult {
  /** CPU microseconds per request spent by each process during the run. */
  cpu: { upstream: number | null; gateway: number | null; client: number };
}
interface Row {
  mode: string;
  direct: Measured;
  via: Measured;
}

/** Runs the load and notes how much CPU each of the three processes spent on it. */
async function measured(spec: LoadSpec): Promise<Measured> {
  const u0 = await cpuSeconds(upstream.proc.pid);
  const g0 = await cpuSeconds(gateway.proc.pid);
  const c0 = process.cpuUsage();
  const r = await runLoad(spec);
  const c1 = process.cpuUsage(c0);
  const u1 = await cpuSeconds(upstream.proc.pid);
  const g1 = await cpuSeconds(gateway.proc.pid);
  const per = (a: number | null, b: number | null) => (a === null || b === null ? null : ((b - a) * 1e6) / r.requests);
  return { ...r, cpu: { upstream: per(u0, u1), gateway: per(g0, g1), client: (c1.user + c1.system) / r.requests } };
}
const rows: Row[] = [];

try {
  const acct = await benchAccount(gateway.url, "100000");
  const before = await accountBalance(gateway.url, acct.id);
  let gatewayRequests = 0;

  const modes = (process.env.BENCH_MODES ?? "plain,streamed").split(",");
  for (const stream of [false, true].filter((st) => modes.includes(st ? "streamed" : "plain"))) {
    const body = JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: "Say hello in one short sentence." }],
      max_tokens: 64,
      stream,
    });
    const direct = { url: `${upstream.url}/chat/completions`, body, concurrency: CONCURRENCY };
    const via = { url: `${gateway.url}/v1/chat/completions`, body, concurrency: CONCURRENCY, headers: { authorization: `Bearer ${acct.key}` } };
    // Warm both paths (JIT, connection pools, SQLite pages) before measuring.
    await runLoad({ ...direct, total: WARMUP });
    await runLoad({ ...via, total: WARMUP });
    const d = await measured({ ...direct, total: TOTAL });
    const v = await measured({ ...via, total: TOTAL });
    gatewayRequests += WARMUP + TOTAL;
    rows.push({ mode: stream ? "streamed" : "plain", direct: d, via: v });
  }

  const after = await accountBalance(gateway.url, acct.id);
  const ledger = ledgerFacts(gateway.dataDir, acct.id);

  console.log(`\n## gateway overhead (${new Date().toISOString()})`);
  console.log(
    `setup: fake upstream, gateway (bun src/main.ts serve, billing on, SQLite WAL + group commit) and this load generator ` +
      `each in its own process on ${availableParallelism()} CPU(s); model ${MODEL}; ${TOTAL} requests at concurrency ${CONCURRENCY} ` +
      `after ${WARMUP} warm-up requests per path; a request counts when its whole body (or stream) was read.`,
  );
  console.log("");
  console.log("| mode | path | req/s | p50 ms | p99 ms | errors | CPU µs/req: gateway | upstream | client |");
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|");
  const us = (n: number | null) => (n === null ? "n/a" : fmt(n, 0));
  for (const r of rows) {
    for (const [name, x] of [["direct", r.direct], ["via gateway", r.via]] as const) {
      console.log(
        `| ${r.mode} | ${name} | ${fmt(x.rps, 0)} | ${fmt(x.p50)} | ${fmt(x.p99)} | ${x.errors} | ${name === "direct" ? "-" : us(x.cpu.gateway)} | ${us(x.cpu.upstream)} | ${us(x.cpu.client)} |`,
      );
    }
  }
  console.log("");
  for (const r of rows) {
    const ratio = r.via.rps / r.direct.rps;
    console.log(`${r.mode}: gateway/direct throughput ratio ${fmt(ratio, 2)} (aim ≥ 0.33: ${ratio >= 1 / 3 ? "met" : "MISSED"})`);
    if (r.direct.firstError) console.log(`  direct first error: ${r.direct.firstError}`);
    if (r.via.firstError) console.log(`  gateway first error: ${r.via.firstError}`);
  }
  const exact = ledger.sum === ledger.balance;
  console.log(
    `billing: ${ledger.charges} charge entries for ${gatewayRequests} gateway requests; balance ${before} → ${after} USD; ` +
      `pending holds ${ledger.pendingHolds}; ledger sum equals balance: ${exact}`,
  );
  if (rows.some((r) => r.via.errors > 0 || r.direct.errors > 0) || ledger.charges !== gatewayRequests || ledger.pendingHolds !== 0 || !exact) {
    process.exitCode = 1;
  }
} finally {
  await gateway.stop();
  await upstream.stop();
}

async function accountBalance(base: string, id: string): Promise<number> {
  const r = await fetch(`${base}/admin/accounts/${id}`, { headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } });
  return ((await r.json()) as { balance: number }).balance;
}
