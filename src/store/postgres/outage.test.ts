/**
 * The database going away, on a PostgreSQL server of this file's own: writes that precede the
 * upstream fail fast with StoreUnavailable (the ledger's 503), a post caught by a restart is
 * retried and charged exactly once, a hold whose answer was lost is undone, and the same store
 * objects work again once the server is back — no restart of the instance.
 */
import { postOf } from "../../../test/support/post-request";
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { StoreUnavailable } from "../../billing/ledger-store";
import { startPostgres, type PgServer } from "../../../test/support/postgres";
import { pgFixture, type PgFixture } from "../../../test/support/postgres-store";
import { PgDatabase } from "./database";
import { SQL } from "bun";

// Real servers on a shared machine: generous limits (bunfig's [test] timeout is not applied to every test).
setDefaultTimeout(30_000);

let pg: PgServer;
let f: PgFixture;
beforeAll(async () => {
  pg = await startPostgres();
  f = await pgFixture(await pg.createDatabase());
}, 60_000);
afterAll(async () => {
  await f.close();
  await pg.destroy();
});

const hold = (requestId: string, accountId: string, amount: number) => ({ requestId, accountId, amount, endpoint: "/v1/chat/completions", model: "m" });
const limits = { rateLimitRpm: 1000, concurrencyLimit: 10 };

test("while the server is down, reserve and admit fail fast with StoreUnavailable; afterwards they work again", async () => {
  const acct = await f.account(10_000);
  await pg.stop();
  try {
    const t0 = performance.now();
    const [r, a] = await Promise.all([
      Promise.resolve(f.a.ledger.grant(hold("down_1", acct, 10))).catch((e) => e),
      Promise.resolve(f.a.limiter.admit(acct, limits)).catch((e) => e),
    ]);
    expect(r).toBeInstanceOf(StoreUnavailable);
    expect(a).toBeInstanceOf(StoreUnavailable);
    // They fail rather than wait (a wait would hit the test's timeout); the time is printed.
    console.log(`reserve and admit failed with StoreUnavailable after ${Math.round(performance.now() - t0)} ms`);
    // Nothing of the database's words in the error.
    expect(String(r.message)).not.toContain("127.0.0.1");
  } finally {
    await pg.start();
  }
  expect(await f.a.ledger.grant(hold("up_1", acct, 10))).toEqual({ ok: true, direct: true });
  expect(await f.balances(acct)).toEqual({ balance: 10_000, reserved: 10 });
});

test("a post caught by a restart is retried until the server is back, and charged exactly once", async () => {
  const acct = await f.account(10_000);
  await f.a.ledger.grant(hold("restart_1", acct, 1000));
  await f.a.ledger.grant(hold("restart_2", acct, 1000));
  await pg.stop();
  const posts = [
    f.a.ledger.post(postOf({ requestId: "restart_1", amount: 600, serviceTier: "default" })),
    f.a.ledger.post(postOf({ requestId: "restart_2", amount: 700, serviceTier: "default" })),
  ];
  await Bun.sleep(800);
  await pg.start();
  const results = await Promise.all(posts);
  expect(results.map((r) => r.charged)).toEqual([600, 700]);
  expect(await f.balances(acct)).toEqual({ balance: 8700, reserved: 0 });
  const [{ n }] = (await f.a.db.sql`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = ${acct} AND kind = 'charge'`) as [{ n: number }];
  expect(n).toBe(2);
});

test("a reserve whose connection dies mid-statement leaves no hold behind", async () => {
  const acct = await f.account(10_000);
  // Another session holds the account's row, so the reserve waits on it; then its backend is killed.
  const blocker = await f.a.db.sql.reserve();
  try {
    await blocker`BEGIN`;
    await blocker`SELECT 1 FROM accounts WHERE id = ${acct} FOR UPDATE`;
    const pending = Promise.resolve(f.a.ledger.grant(hold("killed_1", acct, 500))).catch((e) => e);
    // Watched from outside the blocking transaction: pg_stat_activity is a snapshot per transaction.
    const admin = f.a.db.sql;
    let pid: number | undefined;
    for (let i = 0; i < 200 && pid === undefined; i++) {
      const rows = (await admin`SELECT pid FROM pg_stat_activity WHERE query LIKE '%switchyard_grant(%' AND wait_event_type = 'Lock'`) as { pid: number }[];
      pid = rows[0]?.pid;
      if (pid === undefined) await Bun.sleep(20);
    }
    expect(pid).toBeDefined();
    await admin`SELECT pg_terminate_backend(${pid!})`;
    expect(await pending).toBeInstanceOf(StoreUnavailable);
    await blocker`COMMIT`;
  } finally {
    blocker.release();
  }
  await Bun.sleep(300);
  await f.a.ledger.flush();
  expect(await f.balances(acct)).toEqual({ balance: 10_000, reserved: 0 });
  const rows = await f.a.db.sql`SELECT state FROM holds WHERE request_id = 'killed_1'`;
  expect(rows.length === 0 || rows[0].state === "voided").toBe(true);
});

test("a database down for longer than the instance timeout releases nobody alive once it is back", async () => {
  const acct = await f.account(10_000);
  const live = await f.instance({ timeoutMs: 600 });
  live.registry.start();
  const survivor = await f.instance({ timeoutMs: 600 });
  survivor.registry.start();
  await live.ledger.grant(hold("outage_live_1", acct, 100));
  await pg.stop();
  await Bun.sleep(1200); // every heartbeat is now older than the timeout
  await pg.start();
  // Straight after the restart a pass would judge by stale heartbeats: it must not release anyone.
  const released = [];
  const until = Date.now() + 1500;
  while (Date.now() < until) {
    released.push(...(await survivor.registry.reap().catch(() => [])));
    await Bun.sleep(50);
  }
  expect(released.filter((r) => r.instanceId === live.registry.id)).toEqual([]);
  expect(await f.balances(acct)).toEqual({ balance: 10_000, reserved: 100 });
  expect(await live.ledger.post(postOf({ requestId: "outage_live_1", amount: 60, serviceTier: "default" }))).toMatchObject({ charged: 60, fresh: true });
  live.registry.halt();
  survivor.registry.halt();
});

test("a statement waiting on a row lock past the stall time is no outage: the probe is answered, the database stays up", async () => {
  const url = await pg.createDatabase();
  const downs: boolean[] = [];
  const db = new PgDatabase({ url, pool: 2, stallMs: 200, onDown: (down) => void downs.push(down) });
  const other = new SQL({ url, max: 1 });
  let commit = () => {};
  try {
    await db.run((sql) => sql`CREATE TABLE t (id INT PRIMARY KEY, n INT NOT NULL)`);
    await db.run((sql) => sql`INSERT INTO t VALUES (1, 0)`);
    let locked = () => {};
    const lockTaken = new Promise<void>((r) => (locked = r));
    const holder = other.begin(async (tx) => {
      await tx`SELECT n FROM t WHERE id = 1 FOR UPDATE`;
      locked();
      await new Promise<void>((r) => (commit = r));
    });
    await lockTaken;
    const waiting = db.run((sql) => sql`UPDATE t SET n = n + 1 WHERE id = 1 RETURNING n`);
    // The watchdog sees the stall and probes; the database answers, so it probes again a stall
    // later (an unanswered probe would have marked it down first).
    while (db.probes < 2) await Bun.sleep(10);
    expect(downs).toEqual([]);
    commit();
    await holder;
    expect(await waiting).toEqual([{ n: 1 }]);
    expect(downs).toEqual([]);
  } finally {
    commit();
    await other.close();
    await db.close();
  }
});
