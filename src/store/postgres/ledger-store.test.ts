/**
 * PostgresLedgerStore at the store level, against a real PostgreSQL 18 (test/support/postgres.ts):
 * every rule of the LedgerStore port, the constraints behind them, batching, and concurrency
 * across instances sharing the database.
 */
import { postOf } from "../../../test/support/post-request";
import { describe, expect, test } from "bun:test";
import { StoreUnavailable } from "../../billing/ledger-store";
import { MAX_BALANCE } from "../../billing/ledger";
import { DomainError, InternalError } from "../../errors";
import { usePgFixture } from "../../../test/support/postgres-store";

const f = usePgFixture();

const hold = (requestId: string, accountId: string, amount: number) => ({ requestId, accountId, amount, endpoint: "/v1/chat/completions", model: "m", createdAt: Math.floor(Date.now() / 1000) });
let seq = 0;
const rid = () => `req_${++seq}_${Math.random().toString(36).slice(2, 8)}`;

describe("reserve", () => {
  test("holds only what the available balance covers, and says what is available", async () => {
    const acct = await f.account(1000);
    expect(await f.a.ledger.grant(hold(rid(), acct, 600))).toEqual({ ok: true, direct: true });
    expect(await f.a.ledger.grant(hold(rid(), acct, 500))).toEqual({ ok: false, available: 400 });
    expect(await f.a.ledger.grant(hold(rid(), acct, 400))).toEqual({ ok: true, direct: true });
    expect(await f.balances(acct)).toEqual({ balance: 1000, reserved: 1000 });
    expect(await f.a.ledger.grant(hold(rid(), acct, 0))).toEqual({ ok: true, direct: true });
    expect(await f.a.ledger.grant(hold(rid(), acct, 1))).toEqual({ ok: false, available: 0 });
  });

  test("an unknown account is refused like an empty one; a bad amount is refused before the database", async () => {
    expect(await f.a.ledger.grant(hold(rid(), "acct_nope", 1))).toEqual({ ok: false, available: 0 });
    await expect(f.a.ledger.grant(hold(rid(), "acct_nope", -1))).rejects.toBeInstanceOf(RangeError);
    await expect(f.a.ledger.grant(hold(rid(), "acct_nope", 0.5))).rejects.toBeInstanceOf(RangeError);
  });

  test("the hold row belongs to this instance", async () => {
    const acct = await f.account(10);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 10));
    const [row] = await f.a.db.sql`SELECT state, instance_id, amount::int AS amount FROM holds WHERE request_id = ${id}`;
    expect(row).toEqual({ state: "pending", instance_id: f.a.registry.id, amount: 10 });
  });

  test("many concurrent reserves from two instances against a balance covering exactly N: exactly N succeed", async () => {
    const b = await f.instance();
    const N = 37;
    const amount = 1_000_003;
    const acct = await f.account(N * amount + amount - 1);
    const attempts = 300;
    const results = await Promise.all(
      Array.from({ length: attempts }, (_, i) => (i % 2 ? f.a : b).ledger.grant(hold(`conc_${acct}_${i}`, acct, amount))),
    );
    expect(results.filter((r) => r.ok).length).toBe(N);
    expect(await f.balances(acct)).toEqual({ balance: N * amount + amount - 1, reserved: N * amount });
    const [{ n }] = (await f.a.db.sql`SELECT count(*)::int AS n FROM holds WHERE account_id = ${acct} AND state = 'pending'`) as [{ n: number }];
    expect(n).toBe(N);
  });
});

describe("post", () => {
  test("charges at most the hold, lowers the balance, releases the hold's reservation, writes one entry", async () => {
    const acct = await f.account(5000);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 3000));
    const r = await f.a.ledger.post(postOf({ requestId: id, amount: 1200, serviceTier: "default", inputTokens: 10, outputTokens: 20, cachedTokens: 4, reasoningTokens: 3 }));
    expect(r).toEqual({ charged: 1200, balanceAfter: 3800, fresh: true });
    expect(await f.balances(acct)).toEqual({ balance: 3800, reserved: 0 });
    const [entry] = await f.a.ledger.entries(acct, 1);
    expect(entry).toMatchObject({ kind: "charge", amount: -1200, balance_after: 3800, request_id: id, input_tokens: 10, output_tokens: 20, endpoint: "/v1/chat/completions", model: "m" });
    const [h] = await f.a.db.sql`SELECT state FROM holds WHERE request_id = ${id}`;
    expect(h.state).toBe("posted");
  });

  test("a charge records the prompt tokens read from and written to the cache, and what the cache saved", async () => {
    const acct = await f.account(5000);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 3000));
    await f.a.ledger.post(postOf({ requestId: id, amount: 900, serviceTier: "default", inputTokens: 1000, outputTokens: 5, cachedTokens: 700, cacheWriteTokens: 200, cacheSaved: -40 }));
    const [entry] = await f.a.ledger.entries(acct, 1);
    expect(entry).toMatchObject({ kind: "charge", amount: -900, input_tokens: 1000, cached_tokens: 700, cache_write_tokens: 200, cache_saved: -40 });
    // A credit records none.
    const [credit] = (await f.a.ledger.entries(acct, 2)).slice(1);
    expect(credit).toMatchObject({ kind: "credit", cached_tokens: 0, cache_write_tokens: 0, cache_saved: 0 });
  });

  test("a repeat returns the first charge and takes nothing more", async () => {
    const acct = await f.account(5000);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 1000));
    const first = await f.a.ledger.post(postOf({ requestId: id, amount: 700, serviceTier: "default" }));
    const again = await f.a.ledger.post(postOf({ requestId: id, amount: 900, serviceTier: "default" }));
    expect(again).toEqual({ charged: 700, balanceAfter: first.balanceAfter, fresh: false });
    expect(await f.balances(acct)).toEqual({ balance: 4300, reserved: 0 });
    expect((await f.a.ledger.entries(acct, 10)).filter((e) => e.kind === "charge").length).toBe(1);
  });

  test("a post above its hold is refused and the hold stays pending; a post without a hold is refused", async () => {
    const acct = await f.account(5000);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 1000));
    await expect(f.a.ledger.post(postOf({ requestId: id, amount: 1001, serviceTier: "default" }))).rejects.toBeInstanceOf(InternalError);
    expect(await f.balances(acct)).toEqual({ balance: 5000, reserved: 1000 });
    await expect(f.a.ledger.post(postOf({ requestId: rid(), amount: 1, serviceTier: "default" }))).rejects.toBeInstanceOf(InternalError);
    expect(await f.a.ledger.post(postOf({ requestId: id, amount: 1000, serviceTier: "default" }))).toMatchObject({ charged: 1000, fresh: true });
  });

  test("a stored response is written with its charge; a turn that cannot be stored is not charged, and fails alone", async () => {
    const acct = await f.account(10_000);
    const ids = [rid(), rid(), rid()];
    for (const id of ids) await f.a.ledger.grant(hold(id, acct, 1000));
    const resp = (id: string) => ({
      id, accountId: acct, previousResponseId: null, inputItems: [{ role: "user", content: "hé \"quoted\"" }],
      response: { id, object: "response", output: [{ type: "message", z: 1, a: 2 }] }, createdAt: 1,
    });
    const results = await Promise.allSettled([
      f.a.ledger.post(postOf({ requestId: ids[0]!, amount: 100, serviceTier: "default", storedResponse: resp("resp_dup") })),
      f.a.ledger.post(postOf({ requestId: ids[1]!, amount: 100, serviceTier: "default", storedResponse: resp("resp_dup") })),
      f.a.ledger.post(postOf({ requestId: ids[2]!, amount: 100, serviceTier: "default" })),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const [stored] = await f.a.db.sql`SELECT input_items, response FROM responses WHERE id = 'resp_dup'`;
    // Stored as the exact JSON text, key order kept, as the SQLite store keeps it.
    expect(stored.response).toBe(JSON.stringify(resp("resp_dup").response));
    expect(stored.input_items).toBe(JSON.stringify(resp("resp_dup").inputItems));
    expect(await f.balances(acct)).toEqual({ balance: 9800, reserved: 1000 });
    expect(await f.a.ledger.voidDirect(ids[1]!)).toBe(true);
  });

  test("concurrent posts go out in batches, and every number adds up", async () => {
    const acct = await f.account(100_000_000);
    const n = 600;
    const ids = Array.from({ length: n }, rid);
    await Promise.all(ids.map((id) => f.a.ledger.grant(hold(id, acct, 1000))));
    const before = f.a.ledger.batchStats.postBatches;
    const results = await Promise.all(ids.map((id, i) => f.a.ledger.post(postOf({ requestId: id, amount: 1 + (i % 1000), serviceTier: "default" }))));
    const batches = f.a.ledger.batchStats.postBatches - before;
    expect(batches).toBeLessThan(n / 5);
    const charged = results.reduce((s, r) => s + r.charged, 0);
    expect(await f.balances(acct)).toEqual({ balance: 100_000_000 - charged, reserved: 0 });
    expect(await f.ledgerSum(acct)).toBe(100_000_000 - charged);
    // balance_after runs down entry by entry, the newest equal to the balance.
    const entries = (await f.a.ledger.entries(acct, n + 1)).reverse();
    let running = 0;
    for (const e of entries) {
      running += e.amount;
      expect(e.balance_after).toBe(running);
    }
  });
});

describe("void", () => {
  test("voids a pending hold once; a posted or voided hold is a no-op; a post after a void is refused", async () => {
    const acct = await f.account(1000);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 800));
    const [first, second] = await Promise.all([f.a.ledger.voidDirect(id), f.a.ledger.voidDirect(id)]);
    expect([first, second]).toEqual([true, false]);
    expect(await f.a.ledger.voidDirect(id)).toBe(false);
    expect(await f.balances(acct)).toEqual({ balance: 1000, reserved: 0 });
    await expect(f.a.ledger.post(postOf({ requestId: id, amount: 1, serviceTier: "default" }))).rejects.toBeInstanceOf(InternalError);
    const posted = rid();
    await f.a.ledger.grant(hold(posted, acct, 100));
    await f.a.ledger.post(postOf({ requestId: posted, amount: 50, serviceTier: "default" }));
    expect(await f.a.ledger.voidDirect(posted)).toBe(false);
    expect(await f.balances(acct)).toEqual({ balance: 950, reserved: 0 });
  });
});

describe("adjust", () => {
  test("credits and debits are entries; a deduction may not dig into what is held; the maximum holds", async () => {
    const acct = await f.account(0);
    expect(await f.a.ledger.adjust(acct, 500, "grant")).toEqual({ balanceAfter: 500 });
    await f.a.ledger.grant(hold(rid(), acct, 300));
    const below = await f.a.ledger.adjust(acct, -201, "refund").catch((e) => e);
    expect(below).toBeInstanceOf(DomainError);
    expect(below).toMatchObject({ kind: "invalid_request", param: "amount" });
    expect(await f.a.ledger.adjust(acct, -200, "refund")).toEqual({ balanceAfter: 300 });
    const above = await f.a.ledger.adjust(acct, MAX_BALANCE, "too much").catch((e) => e);
    expect(above).toMatchObject({ kind: "invalid_request", param: "amount" });
    expect(await f.a.ledger.adjust("acct_nope", 1, "x").catch((e) => e)).toMatchObject({ kind: "not_found" });
    const entries = await f.a.ledger.entries(acct, 10);
    expect(entries.map((e) => [e.kind, e.amount, e.balance_after])).toEqual([["debit", -200, 300], ["credit", 500, 500]]);
  });
});

describe("constraints the database enforces on its own", () => {
  test("ledger entries cannot be changed or removed", async () => {
    const acct = await f.account(10);
    for (const stmt of [
      f.a.db.sql`UPDATE ledger_entries SET amount = 0 WHERE account_id = ${acct}`,
      f.a.db.sql`DELETE FROM ledger_entries WHERE account_id = ${acct}`,
      f.a.db.sql`TRUNCATE ledger_entries CASCADE`,
    ]) {
      await expect(stmt).rejects.toThrow(/immutable/);
    }
  });

  test("balance ≥ reserved ≥ 0 and one charge per request id", async () => {
    const acct = await f.account(10);
    await expect(f.a.db.sql`UPDATE accounts SET balance = -1 WHERE id = ${acct}`).rejects.toThrow(/check constraint/);
    await expect(f.a.db.sql`UPDATE accounts SET reserved = 11 WHERE id = ${acct}`).rejects.toThrow(/check constraint/);
    await expect(f.a.db.sql`UPDATE accounts SET reserved = -1 WHERE id = ${acct}`).rejects.toThrow(/check constraint/);
    const charge = (id: string) => f.a.db.sql`
      INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, created_at) VALUES (${acct}, 'charge', -1, 9, ${id}, 0)`;
    await charge("dup_charge");
    await expect(charge("dup_charge")).rejects.toThrow(/duplicate key/);
  });
});

describe("start-up and instances", () => {
  test("releaseAbandoned voids what previous runs of this instance left, and never another instance's", async () => {
    const acct = await f.account(10_000);
    const old = await f.instance({ name: "restarting" });
    const other = await f.instance({ name: "bystander" });
    await old.ledger.grant(hold(rid(), acct, 1000));
    await old.ledger.grant(hold(rid(), acct, 1000));
    await other.ledger.grant(hold(rid(), acct, 500));
    old.registry.halt(); // killed: no clean release
    const restarted = await f.instance({ name: "restarting" });
    expect(await restarted.ledger.releaseAbandoned()).toBe(2);
    expect(await restarted.ledger.releaseAbandoned()).toBe(0);
    expect(await f.balances(acct)).toEqual({ balance: 10_000, reserved: 500 });
    // The previous run may no longer take holds.
    const late = await Promise.resolve(old.ledger.grant(hold(rid(), acct, 1))).catch((e) => e);
    expect(late).toBeInstanceOf(StoreUnavailable);
  });

  test("pendingHolds counts holds not yet posted or voided", async () => {
    const before = await f.a.ledger.pendingHolds();
    const acct = await f.account(100);
    const id = rid();
    await f.a.ledger.grant(hold(id, acct, 10));
    expect(await f.a.ledger.pendingHolds()).toBe(before + 1);
    await f.a.ledger.voidDirect(id);
    expect(await f.a.ledger.pendingHolds()).toBe(before);
  });
});

describe("expireHolds", () => {
  test("voids the pending holds dated before the cutoff, whichever instance owns them; the rest stay", async () => {
    const b = await f.instance();
    const acct = await f.account(1000);
    const [old, other, young, posted] = [rid(), rid(), rid(), rid()];
    await f.a.ledger.grant({ ...hold(old, acct, 100), createdAt: 1_000 });
    await b.ledger.grant({ ...hold(other, acct, 200), createdAt: 1_500 });
    await f.a.ledger.grant({ ...hold(young, acct, 300), createdAt: 5_000 });
    await f.a.ledger.grant({ ...hold(posted, acct, 50), createdAt: 1_000 });
    await f.a.ledger.post(postOf({ requestId: posted, amount: 40, serviceTier: "default" }));
    expect((await f.a.ledger.expireHolds(2_000)).sort()).toEqual([old, other].sort());
    expect(await f.balances(acct)).toEqual({ balance: 960, reserved: 300 });
    // Nothing left to expire below the cutoff; an expired hold can no longer be charged.
    expect(await f.a.ledger.expireHolds(2_000)).toEqual([]);
    await expect(f.a.ledger.post(postOf({ requestId: old, amount: 10, serviceTier: "default" }))).rejects.toBeInstanceOf(InternalError);
    expect(await f.balances(acct)).toEqual({ balance: 960, reserved: 300 });
  });
});
