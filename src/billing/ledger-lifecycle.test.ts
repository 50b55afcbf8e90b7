/**
 * The ledger beyond its numbered invariants (ledger.test.ts), over the real SQLite store: accounts
 * opened with their credits in one transaction and the maximum balance, group-committed charges,
 * holds released by the expiry sweep (invariant 6's expiry), and charges of cached and written
 * prompt tokens. The setup is shared with ledger.test.ts (ledger-test-support.ts).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { DomainError } from "../errors";
import { Ledger, MAX_BALANCE } from "./ledger";
import type { Consumption } from "./ledger-store";
import type { Hold } from "./hold";
import { fillDisk } from "../../test/support/disk";
import { account, db, entrySum, ledger, log, nextSeq, price, reserve, row, setUp, store, tearDown } from "./ledger-test-support";

beforeEach(() => setUp());
afterEach(tearDown);

describe("accounts and credits", () => {
  test("account creation with credits is one transaction: on a full disk neither the account nor its credit exists", async () => {
    const disk = fillDisk(db);
    await expect(ledger.openAccount({ id: "acct_full", name: "d", createdAt: 1 }, 1_000_000_000, "initial credits")).rejects.toMatchObject({
      code: "service_unavailable",
    });
    disk.restore();
    expect(db.query("SELECT COUNT(*) AS n FROM accounts WHERE id = 'acct_full'").get()).toEqual({ n: 0 });
    expect(db.query("SELECT COUNT(*) AS n FROM ledger_entries WHERE account_id = 'acct_full'").get()).toEqual({ n: 0 });
  });

  test("a credit that would pass the maximum balance is refused and changes nothing", async () => {
    const a = await account(MAX_BALANCE);
    await expect(ledger.adjust(a, 1, "one more unit")).rejects.toThrow(/may not exceed 9000000 USD/);
    expect(row(a).balance).toBe(MAX_BALANCE);
    expect(entrySum(a)).toBe(MAX_BALANCE);
    await expect(ledger.openAccount({ id: "acct_over", name: "x", createdAt: 1 }, MAX_BALANCE + 1, "x")).rejects.toMatchObject({ param: "credits" });
  });

  test("ledger entries are immutable", async () => {
    await account(100);
    expect(() => db.run("UPDATE ledger_entries SET amount = 1")).toThrow(/immutable/);
    expect(() => db.run("DELETE FROM ledger_entries")).toThrow(/immutable/);
  });
});

describe("group commit", () => {
  test("many settlements in one turn share transactions", async () => {
    const a = await account(1_000_000);
    const holds: Hold[] = await Promise.all(Array.from({ length: 100 }, () => reserve(a, { inputTokens: 10 })));
    const before = store.commitStats;
    await Promise.all(holds.map((h) => h.settle({ inputTokens: 7, serviceTier: "default" })));
    expect(store.commitStats.writes - before.writes).toBe(100);
    expect(store.commitStats.batches - before.batches).toBeLessThan(5);
    expect(row(a).balance).toBe(1_000_000 - 700);
    expect(entrySum(a)).toBe(1_000_000 - 700);
  });
});

describe("hold expiry", () => {
  /** A ledger on the same store whose clock the test moves. */
  function clocked(expirySeconds: number) {
    const clock = { ms: 1_000_000_000_000 };
    const l = new Ledger(store, log, { holdExpirySeconds: expirySeconds, now: () => clock.ms });
    return { l, clock };
  }
  const reserveOn = (l: Ledger, accountId: string, budget: Consumption) =>
    l.reserve({ requestId: `req_${nextSeq()}`, accountId, endpoint: "/v1/chat/completions", model: "m", budget, price });

  test("a hold open past its expiry is released by the sweep: what it held returns, nothing is charged, release says voided", async () => {
    const { l, clock } = clocked(60);
    const a = await account(1_000);
    const old = await reserveOn(l, a, { outputTokens: 100 });
    clock.ms += 30_000;
    const young = await reserveOn(l, a, { outputTokens: 50 });
    expect(l.held(a)).toBe(300);
    // Not yet: 60 s have not passed for either.
    clock.ms += 30_000;
    expect(await l.expireHolds()).toBe(0);
    clock.ms += 1_000;
    expect(await l.expireHolds()).toBe(1);
    expect(l.held(a)).toBe(100);
    expect(old.status).toBe("released");
    expect(log.lines.some((x) => x.msg === "a hold open past its expiry was released" && x.request_id === old.requestId)).toBe(true);
    // The stuck request wakes up: it cannot be charged, and it is told its hold was voided.
    await expect(old.settle({ outputTokens: 10, serviceTier: "default" })).rejects.toBeInstanceOf(DomainError);
    expect(await old.release()).toBe(true);
    // The young one settles as usual, and is not swept once closed.
    expect((await young.settle({ outputTokens: 20, serviceTier: "default" })).charged).toBe(40);
    clock.ms += 3_600_000;
    expect(await l.expireHolds()).toBe(0);
    expect(l.held(a)).toBe(0);
    expect(db.query("SELECT balance FROM accounts WHERE id = ?").get(a)).toEqual({ balance: 960 });
    expect(db.query("SELECT COUNT(*) AS n FROM ledger_entries WHERE kind = 'charge'").get()).toEqual({ n: 1 });
    expect(l.pendingHolds()).toBe(0);
    l.close();
  });

  test("a settle racing the sweep: charged exactly once, or voided and never charged", async () => {
    const { l, clock } = clocked(10);
    const a = await account(10_000);
    const holds: Hold[] = [];
    for (let i = 0; i < 6; i++) holds.push(await reserveOn(l, a, { outputTokens: 100 }));
    clock.ms += 11_000;
    const settles = holds.map((h) => h.settle({ outputTokens: 100, serviceTier: "default" }).then((s) => s.charged, () => null));
    const swept = l.expireHolds();
    const results = await Promise.all(settles);
    await swept;
    for (const h of holds) await h.release();
    const charged = results.filter((r) => r !== null);
    const entries = db.query("SELECT COUNT(*) AS n, COALESCE(SUM(-amount), 0) AS s FROM ledger_entries WHERE kind = 'charge'").get() as { n: number; s: number };
    expect(entries.n).toBe(charged.length);
    expect(entries.s).toBe(charged.reduce((x, y) => x! + y!, 0));
    expect(l.held(a)).toBe(0);
    expect(await store.pendingHolds()).toBe(0);
    expect(l.pendingHolds()).toBe(0);
    l.close();
  });
});

describe("cached and written prompt tokens (docs/money.md, \"Cached input\")", () => {
  /** 10 units per uncached prompt token, 1 per cache read, 20 per cache write, 30 per output token. */
  const cachePrice = (u: Consumption) => {
    const input = u.inputTokens ?? 0;
    const read = Math.min(u.cachedTokens ?? 0, input);
    const written = Math.min(u.cacheWriteTokens ?? 0, input - read);
    return 10 * (input - read - written) + read + 20 * written + 30 * (u.outputTokens ?? 0);
  };
  const reserveCached = (accountId: string, budget: Consumption) =>
    ledger.reserve({ requestId: `req_${nextSeq()}`, accountId, endpoint: "/v1/chat/completions", model: "m", budget, price: cachePrice, priceNote: "price per 1M USD: input 10, cached input 1, cache write 20, output 30" });
  const entry = (requestId: string) =>
    db.query("SELECT amount, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved, reason FROM ledger_entries WHERE request_id = ? AND kind = 'charge'").get(requestId);

  test("a charge prices reads and writes at their own prices and records them, with what the cache saved", async () => {
    const a = await account(1_000_000);
    // Writes cost more than input: the budget holds every prompt token at the write price.
    const hold = await reserveCached(a, { inputTokens: 1_000, cacheWriteTokens: 1_000, outputTokens: 10 });
    expect(hold.amount).toBe(20_000 + 300);
    const s = await hold.settle({ inputTokens: 1_000, cachedTokens: 800, cacheWriteTokens: 150, outputTokens: 10, serviceTier: "default" });
    // 50 uncached × 10 + 800 × 1 + 150 × 20 + 10 × 30; all of it at the input price would be 10,300.
    expect(s).toMatchObject({ charged: 4_600, clamped: false, cacheSaved: 10_300 - 4_600, recorded: { inputTokens: 1_000, cachedTokens: 800, cacheWriteTokens: 150 } });
    expect(entry(hold.requestId)).toEqual({
      amount: -4_600, input_tokens: 1_000, output_tokens: 10, cached_tokens: 800, cache_write_tokens: 150, cache_saved: 5_700,
      reason: "price per 1M USD: input 10, cached input 1, cache write 20, output 30",
    });
  });

  test("every prompt token written, the dearest honest usage, fits its hold exactly", async () => {
    const a = await account(1_000_000);
    const hold = await reserveCached(a, { inputTokens: 1_000, cacheWriteTokens: 1_000, outputTokens: 10 });
    const s = await hold.settle({ inputTokens: 1_000, cacheWriteTokens: 1_000, outputTokens: 10, serviceTier: "default" });
    expect(s).toMatchObject({ charged: hold.amount, clamped: false, cacheSaved: 10_300 - 20_300 });
    expect(entry(hold.requestId)).toMatchObject({ cache_write_tokens: 1_000, cache_saved: -10_000 });
  });

  test("over the hold, reads and writes are clamped like the prompt they are part of", async () => {
    const a = await account(1_000_000);
    const hold = await reserveCached(a, { inputTokens: 100, outputTokens: 10 });
    expect(hold.amount).toBe(1_300);
    const s = await hold.settle({ inputTokens: 50_000, cachedTokens: 90, cacheWriteTokens: 40_000, outputTokens: 10, serviceTier: "default" });
    // The prompt is cut to its budget (100), the reads to it (90), the writes to what is left (10).
    expect(s).toMatchObject({ clamped: true, recorded: { inputTokens: 100, cachedTokens: 90, cacheWriteTokens: 10, outputTokens: 10 } });
    expect(s.charged).toBe(Math.min(cachePrice(s.recorded), hold.amount));
    expect(entry(hold.requestId)).toMatchObject({ input_tokens: 100, cached_tokens: 90, cache_write_tokens: 10 });
  });

  test("within the hold too, a charge never records more reads and writes than its prompt", async () => {
    const a = await account(1_000_000);
    const hold = await reserveCached(a, { inputTokens: 1_000, cacheWriteTokens: 1_000, outputTokens: 10 });
    const s = await hold.settle({ inputTokens: 100, cachedTokens: 90, cacheWriteTokens: 500, outputTokens: 10, serviceTier: "default" });
    expect(s).toMatchObject({ clamped: false, recorded: { inputTokens: 100, cachedTokens: 90, cacheWriteTokens: 10 }, charged: 90 + 200 + 300 });
    expect(entry(hold.requestId)).toMatchObject({ input_tokens: 100, cached_tokens: 90, cache_write_tokens: 10 });
  });

  test("credits and debits record no cache tokens", async () => {
    const a = await account(500);
    expect(db.query("SELECT cached_tokens, cache_write_tokens, cache_saved FROM ledger_entries WHERE account_id = ?").get(a)).toEqual({ cached_tokens: 0, cache_write_tokens: 0, cache_saved: 0 });
  });
});
