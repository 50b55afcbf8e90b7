/**
 * The ledger's invariants (stated in ledger.ts's header), each tested over the real SQLite store:
 * holds booked in memory, the ceiling, one charge per request, releases that need no write, keys'
 * spend periods, and the health flag that refuses new holds after the store failed to write.
 * Accounts and credits, group commit, hold expiry and cached prompt tokens are tested in
 * ledger-lifecycle.test.ts; the setup both share is in ledger-test-support.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { FsyncFn } from "../store/sqlite/wal-sync";
import { DomainError } from "../errors";
import { PROBE_INTERVAL_MS, type ClampRecord } from "./ledger";
import type { Hold } from "./hold";
import { fillDisk, holdWriteLock } from "../../test/support/disk";
import { postOf } from "../../test/support/post-request";
import { account, db, dir, entrySum, ledger, log, open, reserve, row, setUp, store, tearDown } from "./ledger-test-support";

/**
 * Flipped by a test to make the WAL fsync fail (after its commit). Otherwise the sync succeeds
 * without touching the disk, as in ledger-test-support.ts.
 */
let fsyncFails = false;
const fsync: FsyncFn = (_fd, cb) => setImmediate(() => cb(fsyncFails ? Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }) : null));

beforeEach(() => {
  fsyncFails = false;
  setUp(fsync);
});
afterEach(tearDown);

const newestBalanceAfter = (id: string) =>
  (db.query("SELECT balance_after FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT 1").get(id) as { balance_after: number }).balance_after;
const charges = (id: string) =>
  db.query("SELECT request_id, amount, input_tokens, output_tokens, reason FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY id").all(id) as {
    request_id: string; amount: number; input_tokens: number; output_tokens: number; reason: string | null;
  }[];

async function rejection(p: Promise<unknown>): Promise<DomainError> {
  const e = await p.then(() => null, (err) => err);
  expect(e).toBeInstanceOf(DomainError);
  return e as DomainError;
}

describe("1. balance ≥ 0 and reserved ≥ 0", () => {
  test("a hold is granted only from the available balance; 402 says how much is available", async () => {
    const a = await account(1000);
    await reserve(a, { inputTokens: 600 });
    const e = await rejection(reserve(a, { inputTokens: 500 }));
    expect([e.kind, e.code]).toEqual(["insufficient_credits", "insufficient_credits"]);
    expect(e.message).toContain("available balance is 0.0000004 USD");
    expect(row(a)).toEqual({ balance: 1000, reserved: 600 });
  });

  test("the store's CHECK constraints refuse a negative balance whatever the caller does", async () => {
    const a = await account(10);
    expect(() => db.run("UPDATE accounts SET balance = -1 WHERE id = ?", [a])).toThrow(/CHECK/);
    expect(() => db.run("UPDATE accounts SET reserved = -1 WHERE id = ?", [a])).toThrow(/CHECK/);
  });

  test("a deduction cannot dig into reserved money", async () => {
    const a = await account(100);
    await reserve(a, { inputTokens: 80 });
    await expect(ledger.adjust(a, -30, "x")).rejects.toThrow(/exceeds the available balance/);
    await ledger.adjust(a, -20, "x");
    expect(row(a)).toEqual({ balance: 80, reserved: 80 });
  });
});

describe("2. held = Σ open holds, and never more than the balance", () => {
  test("through holds, charges, releases and a refused hold; nothing is written for a hold", async () => {
    const a = await account(10_000);
    const batches = store.commitStats.batches;
    const holds = await Promise.all([1, 2, 3, 4, 5].map((k) => reserve(a, { inputTokens: 100 * k })));
    expect(store.commitStats.batches).toBe(batches);
    expect(row(a).reserved).toBe(1500);
    await holds[0]!.settle({ inputTokens: 50, serviceTier: "default" });
    await holds[1]!.release();
    await expect(reserve(a, { inputTokens: 100_000 })).rejects.toThrow(/Insufficient credits/);
    expect(row(a).reserved).toBe(1200);
    expect(ledger.pendingHolds()).toBe(3);
    expect(ledger.book.size).toBe(3);
  });

  test("a balance exactly covered: holds up to it are granted, one unit more is refused; a charge frees its hold at its commit", async () => {
    const a = await account(300);
    const h1 = await reserve(a, { inputTokens: 200 });
    await reserve(a, { inputTokens: 100 });
    await expect(reserve(a, { inputTokens: 1 })).rejects.toMatchObject({ code: "insufficient_credits" });
    const settling = h1.settle({ inputTokens: 150, serviceTier: "default" });
    await settling;
    // 300 − 150 charged − 100 still held: 50 is available.
    await reserve(a, { inputTokens: 50 });
    await expect(reserve(a, { inputTokens: 1 })).rejects.toMatchObject({ code: "insufficient_credits" });
  });
});

describe("3. a charge never exceeds its hold", () => {
  test("usage reported above the hold is clamped: charged = hold, each quantity recorded at most as held; logged and counted", async () => {
    const a = await account(1_000_000);
    const clamps: ClampRecord[] = [];
    ledger.onClamped((c) => clamps.push(c));
    const hold = await reserve(a, { inputTokens: 10, outputTokens: 16 });
    expect(hold.amount).toBe(42);
    const s = await hold.settle({ inputTokens: 200_000, outputTokens: 32_768, serviceTier: "default" });
    expect(s).toMatchObject({ charged: 42, clamped: true, recorded: { inputTokens: 10, outputTokens: 16 }, reportedAmount: 200_000 + 65_536 });
    expect(charges(a)).toEqual([{ request_id: hold.requestId, amount: -42, input_tokens: 10, output_tokens: 16, reason: "clamped to hold" }]);
    expect(clamps).toEqual([{ requestId: hold.requestId, endpoint: "/v1/chat/completions", model: "m", reported: 265_536, held: 42 }]);
    expect(log.lines.find((l) => l.msg === "usage reported above the hold; charge clamped to the hold")).toMatchObject({
      request_id: hold.requestId, endpoint: "/v1/chat/completions", model: "m", held_usd: "0.000000042",
    });
  });

  test("an honest quantity under its budget is kept when only another one overflows", async () => {
    const a = await account(1_000_000);
    const hold = await reserve(a, { inputTokens: 10, outputTokens: 16 });
    const s = await hold.settle({ inputTokens: 7, outputTokens: 1_000_000, serviceTier: "default" });
    expect(s).toMatchObject({ charged: 7 + 32, recorded: { inputTokens: 7, outputTokens: 16 }, clamped: true });
  });

  test("usage within the hold is charged exactly as reported, even when one quantity passes its own budget", async () => {
    const a = await account(1_000_000);
    const hold = await reserve(a, { inputTokens: 10, outputTokens: 16 });
    const s = await hold.settle({ inputTokens: 11, outputTokens: 6, serviceTier: "default" });
    expect(s).toMatchObject({ charged: 23, recorded: { inputTokens: 11, outputTokens: 6 }, clamped: false });
    expect(charges(a)[0]!.reason).toBeNull();
  });

  test("the store itself refuses a post above its hold, and changes nothing", async () => {
    const a = await account(1000);
    const hold = await reserve(a, { inputTokens: 100 });
    await expect(store.post(postOf({ requestId: hold.requestId, accountId: a, amount: 101, holdAmount: 100, direct: false }))).rejects.toMatchObject({ detail: expect.stringMatching(/exceeds its hold/) });
    expect(row(a)).toEqual({ balance: 1000, reserved: 100 });
    expect(hold.status).toBe("open");
  });

  test("an over-reported charge never spends another request's hold or unheld money", async () => {
    const a = await account(100);
    const first = await reserve(a, { inputTokens: 60 });
    const second = await reserve(a, { inputTokens: 40 });
    expect(row(a)).toEqual({ balance: 100, reserved: 100 });
    await first.settle({ inputTokens: 800, serviceTier: "default" });
    expect(row(a)).toEqual({ balance: 40, reserved: 40 });
    const s = await second.settle({ inputTokens: 40, serviceTier: "default" });
    expect(s.charged).toBe(40);
    expect(row(a)).toEqual({ balance: 0, reserved: 0 });
  });
});

describe("4. Σ entries = balance", () => {
  test("credits, debits and charges add up, and the newest balance_after is the balance", async () => {
    const a = await account(5000);
    await ledger.adjust(a, 700, "top-up");
    const h1 = await reserve(a, { inputTokens: 1000 });
    const h2 = await reserve(a, { outputTokens: 300 });
    await Promise.all([h1.settle({ inputTokens: 333, serviceTier: "default" }), h2.settle({ outputTokens: 12, serviceTier: "priority" })]);
    await ledger.adjust(a, -100, "refund");
    expect(row(a).balance).toBe(5000 + 700 - 333 - 24 - 100);
    expect(entrySum(a)).toBe(row(a).balance);
    expect(newestBalanceAfter(a)).toBe(row(a).balance);
  });
});

describe("5. one charge per request id", () => {
  test("a repeated settle, in the same turn or later, returns the first charge", async () => {
    const a = await account(1000);
    const hold = await reserve(a, { inputTokens: 400 });
    const [s1, s2] = await Promise.all([
      hold.settle({ inputTokens: 100, serviceTier: "default" }),
      hold.settle({ inputTokens: 300, serviceTier: "default" }),
    ]);
    const s3 = await hold.settle({ inputTokens: 200, serviceTier: "default" });
    expect(s1.charged).toBe(100);
    expect(s2).toEqual(s1);
    expect(s3).toEqual(s1);
    expect(charges(a)).toHaveLength(1);
    // The store is idempotent too: a post of an already-charged request returns the first charge.
    expect(await store.post(postOf({ requestId: hold.requestId, accountId: a, amount: 5, direct: false }))).toEqual({ charged: 100, balanceAfter: 900, fresh: false });
  });

  test("a request id can hold only once", async () => {
    const a = await account(1000);
    await reserve(a, { inputTokens: 10 }, "req_same");
    const e = await rejection(reserve(a, { inputTokens: 10 }, "req_same"));
    expect(e.kind).toBe("internal");
    expect(row(a).reserved).toBe(10);
  });
});

describe("6. every hold is posted or voided exactly once", () => {
  test("release voids, is idempotent, says it voided; after a charge it is a no-op", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 1000 });
    expect(await h.release()).toBe(true);
    expect(await h.release()).toBe(true);
    expect(h.status).toBe("released");
    expect(row(a)).toEqual({ balance: 1000, reserved: 0 });
    await expect(h.settle({ inputTokens: 1, serviceTier: "default" })).rejects.toMatchObject({ kind: "internal" });

    const posted = await reserve(a, { inputTokens: 10 });
    await posted.settle({ inputTokens: 5, serviceTier: "default" });
    expect(await posted.release()).toBe(false);
    expect(posted.status).toBe("posted");
    expect(ledger.pendingHolds()).toBe(0);
  });

  test("`await using` releases on every path out of a scope", async () => {
    const a = await account(1000);
    let held: Hold | null = null;
    try {
      await using hold = await reserve(a, { inputTokens: 300 });
      held = hold;
      throw new Error("the work failed");
    } catch {}
    expect(held!.status).toBe("released");
    expect(row(a).reserved).toBe(0);
  });

  test("after a crash no hold survives: nothing was written for it, and the balance is whole", async () => {
    const a = await account(100);
    await reserve(a, { inputTokens: 60 });
    // The process dies: nothing flushed, nothing released.
    ledger.close();
    store.commits.abandon();
    db.close();
    open();
    expect(await ledger.releaseAbandoned()).toBe(0);
    expect(row(a)).toEqual({ balance: 100, reserved: 0 });
    await reserve(a, { inputTokens: 100 });
  });

  test("holds an earlier version left pending in the database are voided at start-up, and their reservation returns", async () => {
    const a = await account(100);
    db.run("INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, created_at) VALUES ('req_legacy', ?, 70, 'e', 'm', 'pending', 1)", [a]);
    db.run("UPDATE accounts SET reserved = 70 WHERE id = ?", [a]);
    await expect(reserve(a, { inputTokens: 31 })).rejects.toMatchObject({ code: "insufficient_credits" });
    expect(await ledger.releaseAbandoned()).toBe(1);
    expect(db.query("SELECT reserved FROM accounts WHERE id = ?").get(a)).toEqual({ reserved: 0 });
    await reserve(a, { inputTokens: 100 });
  });

  test("a release needs no write: on a full disk the hold is released at once", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 400 });
    const disk = fillDisk(db);
    try {
      expect(await h.release()).toBe(true);
      expect(ledger.queuedVoids()).toBe(0);
      expect(row(a)).toEqual({ balance: 1000, reserved: 0 });
      expect(ledger.pendingHolds()).toBe(0);
    } finally {
      disk.restore();
    }
  });
});

describe("7. a failed request is never charged", () => {
  test("a charge the store cannot write: settle rejects 503, the hold is released, nothing charged", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 400 });
    db.run("CREATE TEMP TRIGGER refuse_charge BEFORE INSERT ON ledger_entries WHEN NEW.kind = 'charge' BEGIN SELECT RAISE(FAIL, 'disk says no'); END");
    const e = await rejection(h.settle({ inputTokens: 100, serviceTier: "default" }));
    // A broken rule (not a storage condition) is a bug: generic 500, the hold voided durably.
    expect(e.kind).toBe("internal");
    expect(await h.release()).toBe(true);
    db.run("DROP TRIGGER temp.refuse_charge");
    expect(charges(a)).toHaveLength(0);
    expect(row(a)).toEqual({ balance: 1000, reserved: 0 });
  });

  test("on a full disk: settle rejects with 503, the hold is released at once (nothing held), and the client may be told 'not billed'", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 400 });
    const disk = fillDisk(db);
    const e = await rejection(h.settle({ inputTokens: 100, serviceTier: "default" }));
    disk.restore();
    expect([e.kind, e.code, e.retryAfterSeconds]).toEqual(["unavailable", "service_unavailable", 2]);
    expect(e.message).toContain("so it was not billed");
    expect(charges(a)).toHaveLength(0);
    expect(row(a)).toEqual({ balance: 1000, reserved: 0 });
  });
});

describe("8. holds before the upstream, charges durable; store health", () => {
  test("a charge that fails on a full disk refuses new holds with 503 for the probe interval; then they are granted, and the next charge that lands marks the store healthy", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 10 });
    const disk = fillDisk(db);
    await expect(h.settle({ inputTokens: 5, serviceTier: "default" })).rejects.toMatchObject({ code: "service_unavailable" });
    disk.restore();
    const e = await rejection(reserve(a, { inputTokens: 10 }));
    expect([e.kind, e.code]).toEqual(["unavailable", "service_unavailable"]);
    expect(e.message).toBe("The service cannot take requests right now. Nothing was billed; please retry shortly.");
    await Bun.sleep(PROBE_INTERVAL_MS + 20);
    const next = await reserve(a, { inputTokens: 10 });
    expect(ledger.storeUnavailable).toBe(true);
    await next.settle({ inputTokens: 4, serviceTier: "default" });
    expect(ledger.storeUnavailable).toBe(false);
    expect(row(a)).toEqual({ balance: 996, reserved: 0 });
    expect(log.lines.map((l) => l.msg)).toEqual([
      "the ledger cannot write; new requests are refused with 503 until it can",
      "the ledger writes again; requests are accepted",
    ]);
  });

  test("an fsync that fails after its commit: the charge is not acknowledged (nor 'not billed'), and the store stays refused", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 400 });
    fsyncFails = true;
    // Committed, perhaps never on disk: the settle fails with 503, and its void cannot be written.
    await expect(h.settle({ inputTokens: 100, serviceTier: "default" })).rejects.toMatchObject({ code: "service_unavailable" });
    expect(store.commits.failedFatally?.reason).toBe("io");
    expect(ledger.storeUnavailable).toBe(true);
    await expect(reserve(a, { inputTokens: 10 })).rejects.toMatchObject({ code: "service_unavailable" });
    // No silent return to healthy once the disk answers and the probe interval passed.
    fsyncFails = false;
    await Bun.sleep(PROBE_INTERVAL_MS + 20);
    await expect(reserve(a, { inputTokens: 10 })).rejects.toMatchObject({ code: "service_unavailable" });
    expect(ledger.storeUnavailable).toBe(true);
  });

  test("waiting for another connection's write lock never blocks the event loop, and a short lock costs nothing", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 10 });
    const lock = holdWriteLock(join(dir, "switchyard.db"));
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const pending = h.settle({ inputTokens: 7, serviceTier: "default" });
    // The loop keeps running while the charge waits: timers fire, and the lock is released from here.
    await Bun.sleep(60);
    expect(ticks).toBeGreaterThan(0);
    lock.release();
    expect((await pending).charged).toBe(7);
    clearInterval(ticker);
    expect(row(a)).toEqual({ balance: 993, reserved: 0 });
  });

  test("a lock held past the bounded wait refuses the charge with 503, and the hold is released", async () => {
    const a = await account(1000);
    const h = await reserve(a, { inputTokens: 10 });
    const lock = holdWriteLock(join(dir, "switchyard.db"));
    try {
      const e = await rejection(h.settle({ inputTokens: 7, serviceTier: "default" }));
      expect(e.code).toBe("service_unavailable");
    } finally {
      lock.release();
    }
    expect(row(a)).toEqual({ balance: 1000, reserved: 0 });
  });
});
