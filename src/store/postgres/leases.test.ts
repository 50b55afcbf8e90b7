/**
 * Credit and key leases on PostgreSQL (docs/scale-out.md, "Leases"), through the domain ledger as
 * a serving instance runs it: holds come from a lease in memory (no statement), charges go to the
 * instance's journal and reach the database in batches, small balances take the direct path, a
 * hold that does not fit recalls the other instances' unused leases, a crash loses no journaled
 * charge and ships none twice, and unused leases go back by themselves.
 */
import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Ledger } from "../../billing/ledger";
import { Log } from "../../log";
import { DomainError } from "../../errors";
import type { PgInstance } from "../../../test/support/postgres-store";
import { usePgFixture } from "../../../test/support/postgres-store";

const pg = usePgFixture();
const log = new Log("silent");
/** One unit per token: a request's hold is its prompt, and it is charged what it held. */
const price = (u: { inputTokens?: number }) => u.inputTokens ?? 0;

let n = 0;
async function serve(ledger: Ledger, accountId: string, amount: number, keyId?: string): Promise<number> {
  const hold = await ledger.reserve({
    requestId: `req_${randomBytes(4).toString("hex")}_${++n}`, accountId, endpoint: "/v1/embeddings", model: "m",
    budget: { inputTokens: amount }, price, ...(keyId ? { key: { id: keyId, limitReset: null } } : {}),
  });
  try {
    return (await hold.settle({ inputTokens: amount, serviceTier: "default" })).charged;
  } finally {
    await hold.release();
  }
}

const refusal = (p: Promise<unknown>) => p.then(() => "served", (e) => (e instanceof DomainError ? e.code : String(e)));

async function leased(accountId: string): Promise<{ leased: number; rows: number }> {
  const [r] = (await pg.a.db.sql`SELECT a.leased::text AS leased, (SELECT count(*) FROM leases l WHERE l.kind = 'credit' AND l.subject = a.id)::int AS rows
                                    FROM accounts a WHERE a.id = ${accountId}`) as { leased: string; rows: number }[];
  return { leased: Number(r!.leased), rows: r!.rows };
}

async function charges(accountId: string): Promise<number> {
  const [r] = (await pg.a.db.sql`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = ${accountId} AND kind = 'charge'`) as { n: number }[];
  return r!.n;
}

async function instance(opts: { name?: string; journalDir?: string; shipMs?: number; recallMs?: number } = {}): Promise<{ inst: PgInstance; ledger: Ledger }> {
  const inst = await pg.instance({
    leases: true, ledger: { recallMs: opts.recallMs ?? 2_000 },
    ...(opts.name ? { name: opts.name } : {}), ...(opts.journalDir ? { journalDir: opts.journalDir } : {}), ...(opts.shipMs ? { shipMs: opts.shipMs } : {}),
  });
  inst.ledger.startLeases();
  return { inst, ledger: new Ledger(inst.ledger, log) };
}

test("holds come from the lease in memory: no statement per request, the charges reach the database in one batch", async () => {
  const account = await pg.account(1_000_000);
  const { inst, ledger } = await instance({ shipMs: 60_000 });
  await serve(ledger, account, 100); // the first request takes the lease
  const before = inst.db.statements;
  for (let i = 0; i < 50; i++) await serve(ledger, account, 100);
  // A request itself writes nothing to the database; top-ups (off the request path) follow its pace.
  expect(inst.db.statements - before).toBeLessThan(10);
  expect(await charges(account)).toBeLessThanOrEqual(1);
  const batches = inst.ledger.journal!.batches;
  expect(await inst.ledger.journal!.drain(10_000)).toBe(true);
  expect(inst.ledger.journal!.batches - batches).toBe(1);
  expect(await charges(account)).toBe(51);
  expect(await pg.ledgerSum(account)).toBe(1_000_000 - 51 * 100);
});

test("a balance too small to lease is held on the direct path, and charged exactly", async () => {
  const account = await pg.account(250);
  const { inst, ledger } = await instance();
  const hold = await ledger.reserve({ requestId: `req_small_${++n}`, accountId: account, endpoint: "/v1/embeddings", model: "m", budget: { inputTokens: 200 }, price });
  // Four holds' worth is the smallest lease: this one is a hold row of its own.
  expect((await pg.balances(account)).reserved).toBe(200);
  expect((await leased(account)).leased).toBe(0);
  expect((await hold.settle({ inputTokens: 150, serviceTier: "default" })).charged).toBe(150);
  await hold.release();
  expect(await pg.balances(account)).toEqual({ balance: 100, reserved: 0 });
  expect(await refusal(serve(ledger, account, 101))).toBe("insufficient_credits");
  expect(await serve(ledger, account, 100)).toBe(100);
  await inst.ledger.journal!.drain(10_000);
  expect(await pg.balances(account)).toEqual({ balance: 0, reserved: 0 });
});

test("credits for exactly 10 requests, served one at a time by two instances in turn: exactly 10 served, the balance ends exact", async () => {
  const COST = 1_000;
  const account = await pg.account(10 * COST);
  const a = await instance();
  const b = await instance();
  const outcomes: string[] = [];
  for (let i = 0; i < 12; i++) {
    const { ledger } = i % 2 === 0 ? a : b;
    outcomes.push(await refusal(serve(ledger, account, COST)));
  }
  expect(outcomes.slice(0, 10)).toEqual(Array(10).fill("served"));
  expect(outcomes.slice(10)).toEqual(["insufficient_credits", "insufficient_credits"]);
  for (const x of [a, b]) expect(await x.inst.ledger.journal!.drain(10_000)).toBe(true);
  expect(await charges(account)).toBe(10);
  expect(await pg.ledgerSum(account)).toBe(0);
  expect(await pg.balances(account)).toEqual({ balance: 0, reserved: 0 });
});

test("a hold that does not fit this instance's lease recalls the other's unused lease: refused only when the whole account cannot pay", async () => {
  const account = await pg.account(100_000);
  const a = await instance();
  const b = await instance();
  // A leases most of the balance (its pace asks for it), then B needs most of it for one request.
  for (let i = 0; i < 20; i++) await serve(a.ledger, account, 4_000);
  const left = 100_000 - 20 * 4_000;
  expect((await leased(account)).leased).toBeGreaterThan(0);
  expect(await serve(b.ledger, account, left)).toBe(left);
  expect(await refusal(serve(a.ledger, account, 1))).toBe("insufficient_credits");
  for (const x of [a, b]) await x.inst.ledger.journal!.drain(10_000);
  expect(await pg.balances(account)).toEqual({ balance: 0, reserved: 0 });
});

test("a key's limit holds across two instances: exactly as many requests as it allows", async () => {
  const account = await pg.account(1_000_000);
  const keyId = `key_${randomBytes(4).toString("hex")}`;
  await pg.a.db.sql`INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, spend_limit) VALUES (${keyId}, ${account}, 'k', 'sy-t', ${keyId}, 0, 5000)`;
  const a = await instance();
  const b = await instance();
  const outcomes: string[] = [];
  for (let i = 0; i < 8; i++) outcomes.push(await refusal(serve((i % 2 === 0 ? a : b).ledger, account, 1_000, keyId)));
  expect(outcomes).toEqual([...Array(5).fill("served"), "key_limit_exceeded", "key_limit_exceeded", "key_limit_exceeded"]);
  for (const x of [a, b]) await x.inst.ledger.journal!.drain(10_000);
  const [k] = (await pg.a.db.sql`SELECT period_spent::text AS s FROM api_keys WHERE id = ${keyId}`) as { s: string }[];
  expect(Number(k!.s)).toBe(5_000);
});

test("a crash with charges journaled and not shipped: the next run ships each exactly once, then releases the dead run's leases", async () => {
  const account = await pg.account(1_000_000);
  const name = `crashy-${randomBytes(3).toString("hex")}`;
  const journalDir = mkdtempSync(join(tmpdir(), "switchyard-journal-crash-"));
  const first = await instance({ name, journalDir, shipMs: 60_000 });
  for (let i = 0; i < 7; i++) await serve(first.ledger, account, 1_000);
  expect(await charges(account)).toBe(0);
  expect((await leased(account)).leased).toBeGreaterThanOrEqual(7_000);
  // The process dies: heartbeats stop, connections drop, the journal is left as it is on disk.
  first.inst.registry.halt();
  first.inst.ledger.journal!.abandon();
  await first.inst.db.abandon();

  const second = await instance({ name, journalDir });
  await second.inst.ledger.releaseAbandoned();
  expect(await charges(account)).toBe(7);
  expect(await pg.ledgerSum(account)).toBe(1_000_000 - 7_000);
  expect(await leased(account)).toEqual({ leased: 0, rows: 0 });
  // A third run over the same journal ships nothing again.
  second.inst.registry.halt();
  second.inst.ledger.closeJournal();
  const third = await instance({ name, journalDir });
  await third.inst.ledger.releaseAbandoned();
  expect(await charges(account)).toBe(7);
  expect(await pg.balances(account)).toEqual({ balance: 1_000_000 - 7_000, reserved: 0 });
});

test("a stop whose journal cannot ship keeps its leases for it; the next start ships every charge in full", async () => {
  const account = await pg.account(1_000_000);
  const name = `stop-${randomBytes(3).toString("hex")}`;
  const journalDir = mkdtempSync(join(tmpdir(), "switchyard-journal-stop-"));
  const first = await instance({ name, journalDir, shipMs: 60_000 });
  for (let i = 0; i < 5; i++) await serve(first.ledger, account, 1_000);
  // The database refuses the batch (as when it is down at shutdown).
  await pg.a.db.sql`ALTER FUNCTION switchyard_post_leased(TEXT, JSON, BIGINT) RENAME TO switchyard_post_leased_away`;
  try {
    expect(await first.inst.ledger.flush(300)).toBe(false);
  } finally {
    await pg.a.db.sql`ALTER FUNCTION switchyard_post_leased_away(TEXT, JSON, BIGINT) RENAME TO switchyard_post_leased`;
  }
  // Nothing went back: the lease still covers the five journaled charges.
  expect(await charges(account)).toBe(0);
  expect((await leased(account)).leased).toBeGreaterThanOrEqual(5_000);
  first.inst.registry.halt();
  first.inst.ledger.closeJournal();
  await first.inst.db.abandon();

  const second = await instance({ name, journalDir });
  await second.inst.ledger.releaseAbandoned();
  const [cut] = (await pg.a.db.sql`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = ${account} AND reason LIKE 'reduced%'`) as { n: number }[];
  expect({ charges: await charges(account), reduced: cut!.n }).toEqual({ charges: 5, reduced: 0 });
  expect(await pg.balances(account)).toEqual({ balance: 1_000_000 - 5_000, reserved: 0 });
  expect(await leased(account)).toEqual({ leased: 0, rows: 0 });
  second.inst.registry.halt();
  second.inst.ledger.closeJournal();
});

test("a lease unused for a few seconds goes back by itself", async () => {
  const account = await pg.account(1_000_000);
  const { inst, ledger } = await instance();
  await serve(ledger, account, 1_000);
  await inst.ledger.journal!.drain(10_000);
  expect((await leased(account)).leased).toBeGreaterThan(0);
  // Liveness, not timing: the idle return runs every second once a lease is 5 s unused.
  for (let waited = 0; (await leased(account)).leased > 0 && waited < 60_000; waited += 250) await Bun.sleep(250);
  expect(await leased(account)).toEqual({ leased: 0, rows: 0 });
  expect(await pg.balances(account)).toEqual({ balance: 999_000, reserved: 0 });
}, 90_000);
