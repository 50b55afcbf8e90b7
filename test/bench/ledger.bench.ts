/**
 * Money under load, measured:
 *   1. ledger settlements per second, group commit (many settlements per fsynced SQLite
 *      transaction) against one transaction per settlement (GroupCommit maxBatch 1);
 *   2. CPU per hold and charge (grant + post on the SQLite store, all threads: the WAL fsync
 *      runs on the thread pool) by how many requests share a batch — the batch size a gateway
 *      gets from its concurrency sets most of its ledger cost;
 *   3. gateway overhead with limits and billing on: the gateway's own
 *      switchyard_gateway_overhead_seconds histogram (request time minus time waiting on the
 *      upstream), plus end-to-end latency against the same upstream hit directly.
 * Run alone: ./node_modules/.bin/bun test/bench/ledger.bench.ts
 *
 *   BENCH_SETTLEMENTS (4000)  BENCH_INFLIGHT (64)  BENCH_REQUESTS (2000)  BENCH_CONCURRENCY (16)  BENCH_HOLD_CHARGES (48000)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/database";
import { SqliteLedgerStore } from "../../src/store/sqlite/ledger-store";
import { Ledger } from "../../src/billing/ledger";
import type { Hold } from "../../src/billing/hold";
import { HoldBook } from "../../src/billing/hold-book";
import { periodStarts } from "../../src/billing/key-periods";
import { Log } from "../../src/log";
import { benchAccount, startGatewayProcess, startUpstreamProcess } from "./lib/processes";
import { fmt, runLoad } from "./lib/load";

const SETTLEMENTS = Number(process.env.BENCH_SETTLEMENTS ?? 4000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
/** Holds and charges per cell of the CPU table (after a fifth as many to warm up). */
const HOLD_CHARGES = Number(process.env.BENCH_HOLD_CHARGES ?? 48_000);

/** Settles `n` held requests with `inflight` settlements outstanding at any time. */
async function settlementsPerSecond(maxBatch: number, n: number, inflight: number) {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-ledger-bench-"));
  const db = openStore(dir);
  try {
    const store = new SqliteLedgerStore(db, { maxBatch });
    const ledger = new Ledger(store, new Log("silent"));
    const acct = { id: "acct_bench", name: "bench", createdAt: 0 };
    await ledger.openAccount(acct, 1_000_000_000_000, "bench credits");
    // 100 units per token: a hold of 10 input + 5 output tokens is 1500 units, a charge of 7 + 0 is 700.
    const price = (u: { inputTokens?: number; outputTokens?: number }) => 100 * ((u.inputTokens ?? 0) + (u.outputTokens ?? 0));
    const holds: Hold[] = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        ledger.reserve({ requestId: `r${i}`, accountId: acct.id, endpoint: "/v1/chat/completions", model: "m", budget: { inputTokens: 10, outputTokens: 5 }, price }),
      ),
    );
    const before = store.commitStats;
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        await holds[i]!.settle({ serviceTier: "default", inputTokens: 7, outputTokens: 0 });
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: inflight }, worker));
    const seconds = (performance.now() - t0) / 1000;
    const batches = store.commitStats.batches - before.batches;
    const writes = store.commitStats.writes - before.writes;
    const row = db.query("SELECT balance, reserved FROM accounts WHERE id = ?").get(acct.id) as { balance: number; reserved: number };
    if (writes !== n || row.reserved !== 0 || row.balance !== 1_000_000_000_000 - 700 * n) throw new Error("ledger bench: wrong totals");
    return { perSecond: n / seconds, batches, avgBatch: writes / batches, seconds };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`\n## ledger throughput (${new Date().toISOString()})`);
console.log(`setup: SQLite WAL, synchronous=FULL for settlements, data dir under ${tmpdir()}; ${SETTLEMENTS} settlements, ${INFLIGHT} outstanding at a time; ${availableParallelism()} CPU(s).`);
console.log("");
console.log("| mode | settlements/s | transactions | settlements per transaction |");
console.log("|---|---:|---:|---:|");
const group = await settlementsPerSecond(512, SETTLEMENTS, INFLIGHT);
const single = await settlementsPerSecond(1, SETTLEMENTS, INFLIGHT);
console.log(`| group commit (maxBatch 512) | ${fmt(group.perSecond, 0)} | ${group.batches} | ${fmt(group.avgBatch, 1)} |`);
console.log(`| one transaction per settlement (maxBatch 1) | ${fmt(single.perSecond, 0)} | ${single.batches} | ${fmt(single.avgBatch, 1)} |`);
console.log(`group commit speed-up: ${fmt(group.perSecond / single.perSecond, 1)}x`);

/**
 * CPU (all threads) per reserve + post when `batch` requests' holds share one commit and their
 * charges the next: what a hold and a charge cost the SQLite store at that batch size.
 */
/** `withKey`: each request is made with a key that has a daily spend limit, as a client's requests are. */
async function cpuPerSettlement(batch: number, rounds: number, withKey: boolean) {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-ledger-bench-"));
  const db = openStore(dir, { busyTimeoutMs: 0 });
  try {
    const store = new SqliteLedgerStore(db);
    await store.createAccount({ id: "acct_bench", name: "bench", createdAt: 0 }, 1_000_000_000_000, "bench credits");
    db.run("INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, spend_limit, limit_reset) VALUES ('key_bench', 'acct_bench', 'bench', 'sk', 'bench', 0, 1000000000000, 'daily')");
    const book = new HoldBook();
    const now = Math.floor(Date.now() / 1000);
    const key = withKey ? { id: "key_bench", periods: periodStarts(now * 1000) } : undefined;
    let seq = 0;
    const round = async () => {
      const ids = Array.from({ length: batch }, () => `req_${(seq++).toString(36).padStart(10, "0")}`);
      // A hold is booked in memory (no write); the charge is the one durable write.
      for (const requestId of ids) store.grant({ requestId, accountId: "acct_bench", amount: 50_000, endpoint: "/v1/chat/completions", model: "m", createdAt: now, key }, book);
      await Promise.all(ids.map((requestId) => store.post({
        requestId, accountId: "acct_bench", keyId: key ? key.id : null, amount: 40_000, holdAmount: 50_000, direct: false, holdCreatedAt: now,
        endpoint: "/v1/chat/completions", model: "m", inputTokens: 12, outputTokens: 20, serviceTier: "default",
      }, () => book.remove(requestId))));
    };
    for (let i = 0; i < Math.ceil(rounds / 5); i++) await round();
    const before = process.cpuUsage();
    for (let i = 0; i < rounds; i++) await round();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / (rounds * batch);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log("");
console.log("| requests per batch | CPU µs per hold + charge (all threads), no key | with a key |");
console.log("|---:|---:|---:|");
for (const batch of [1, 4, 8, 32]) {
  const rounds = Math.max(200, Math.round(HOLD_CHARGES / batch));
  console.log(`| ${batch} | ${fmt(await cpuPerSettlement(batch, rounds, false), 1)} | ${fmt(await cpuPerSettlement(batch, rounds, true), 1)} |`);
}

// Gateway overhead with limits and billing on: one account, limits enforced (set high enough
// that none refuses), every request reserved, settled durably and metered.
const upstream = await startUpstreamProcess({});
const gateway = await startGatewayProcess({
  SWITCHYARD_UPSTREAM_URL: upstream.url,
  SWITCHYARD_RATE_LIMIT_RPM: "10000000",
  SWITCHYARD_CONCURRENCY_LIMIT: String(CONCURRENCY),
  SWITCHYARD_LOG_LEVEL: "warn",
});
try {
  const acct = await benchAccount(gateway.url, "100000");
  console.log(`\n## gateway overhead with limits and billing on`);
  console.log(
    `setup: fake upstream, gateway and load generator in separate processes; ${REQUESTS} requests per mode at concurrency ${CONCURRENCY} ` +
      `(= the account's concurrency limit, so every request is admitted by the limiter); overhead = the gateway's request time minus its time waiting on the upstream.`,
  );
  console.log("");
  console.log("| mode | direct p50 ms | via gateway p50 ms | via gateway p99 ms | gateway req/s | errors | mean overhead ms | overhead p50 ms (bucket) | overhead p99 ms (bucket) |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  let previous = { sum: 0, count: 0, buckets: new Map<string, number>() };
  for (const stream of [false, true]) {
    const body = JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: "Say hello." }], max_tokens: 64, stream });
    const direct = { url: `${upstream.url}/chat/completions`, body, concurrency: CONCURRENCY };
    const via = { url: `${gateway.url}/v1/chat/completions`, body, concurrency: CONCURRENCY, headers: { authorization: `Bearer ${acct.key}` } };
    await runLoad({ ...direct, total: 200 });
    await runLoad({ ...via, total: 200 });
    previous = await overheadHistogram(gateway.url);
    const d = await runLoad({ ...direct, total: REQUESTS });
    const v = await runLoad({ ...via, total: REQUESTS });
    const now = await overheadHistogram(gateway.url);
    const count = now.count - previous.count;
    const mean = ((now.sum - previous.sum) / count) * 1000;
    const q = (p: number) => bucketQuantile(now.buckets, previous.buckets, count, p);
    console.log(
      `| ${stream ? "streamed" : "plain"} | ${fmt(d.p50, 2)} | ${fmt(v.p50, 2)} | ${fmt(v.p99, 2)} | ${fmt(v.rps, 0)} | ${v.errors} | ${fmt(mean, 3)} | ≤ ${q(0.5)} | ≤ ${q(0.99)} |`,
    );
    if (v.errors > 0) {
      console.log(`  first gateway error: ${v.firstError}`);
      process.exitCode = 1;
    }
  }
} finally {
  await gateway.stop();
  await upstream.stop();
}

async function overheadHistogram(base: string) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const series = 'endpoint="/v1/chat/completions"';
  let sum = 0;
  let count = 0;
  const buckets = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("switchyard_gateway_overhead_seconds") || !line.includes(series)) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (line.startsWith("switchyard_gateway_overhead_seconds_sum")) sum = value;
    else if (line.startsWith("switchyard_gateway_overhead_seconds_count")) count = value;
    else buckets.set(/le="([^"]+)"/.exec(line)![1]!, value);
  }
  return { sum, count, buckets };
}

/** The upper bound (ms) of the histogram bucket holding quantile p of the observations in between. */
function bucketQuantile(now: Map<string, number>, before: Map<string, number>, count: number, p: number): string {
  for (const [le, n] of now) {
    if (n - (before.get(le) ?? 0) >= p * count) return le === "+Inf" ? "+Inf" : fmt(Number(le) * 1000, 1);
  }
  return "+Inf";
}
