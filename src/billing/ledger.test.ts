/**
 * The ledger's invariants (stated in ledger.ts's header), each tested over the real SQLite store:
 * holds booked in memory, the ceiling, one charge per request, releases that need no write, keys'
 * spend periods, and the health flag that refuses new holds after the store failed to write.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { SqliteLedgerStore } from "../store/sqlite/ledger-store";
import type { FsyncFn } from "../store/sqlite/wal-sync";
import { Log } from "../log";
import { DomainError } from "../errors";
import { Ledger, MAX_BALANCE, PROBE_INTERVAL_MS, type ClampRecord } from "./ledger";
import type { Consumption } from "./ledger-store";
import type { Hold } from "./hold";
import { fillDisk, holdWriteLock } from "../../test/support/disk";
import { postOf } from "../../test/support/post-request";

class CapturingLog extends Log {
  readonly lines: Record<string, unknown>[] = [];
  constructor() {
    super("silent");
  }
  override warn(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: "warn", msg, ...fields });
  }
  override error(msg: string, fields?: Record<string, unknown>) {
    this.lines.push({ level: "error", msg, ...fields });
  }
}

let dir: string;
let db: Store;
let store: SqliteLedgerStore;
let ledger: Ledger;
let log: CapturingLog;
/**
 * Flipped by a test to make the WAL fsync fail (after its commit). Otherwise the sync succeeds
 * without touching the disk: these tests are about the ledger's logic, and a busy shared disk
 * would only make them slow (the end-to-end tests sync for real).
 */
let fsyncFails = false;
const fsync: FsyncFn = (_fd, cb) => setImmediate(() => cb(fsyncFails ? Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }) : null));

function open(lockWaitMs = 150) {
  db = openStore(dir, { busyTimeoutMs: 0 });
  store = new SqliteLedgerStore(db, { lockWaitMs, fsync });
  log = new CapturingLog();
  ledger = new Ledger(store, log);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sy-ledger-"));
  fsyncFails = false;
  open();
});
afterEach(() => {
  ledger.close();
  store.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** 1 unit per input token, 2 per output token, 3 per character. */
const price = (u: Consumption) => (u.inputTokens ?? 0) + 2 * (u.outputTokens ?? 0) + 3 * (u.characters ?? 0);
let seq = 0;
async function account(credits: number): Promise<string> {
  const id = `acct_${++seq}`;
  await ledger.openAccount({ id, name: "t", createdAt: 1 }, credits, "seed");
  return id;
}
const reserve = (accountId: string, budget: Consumption, requestId = `req_${++seq}`) =>
  ledger.reserve({ requestId, accountId, endpoint: "/v1/chat/completions", model: "m", budget, price });

/** The balance on disk, and what the ledger holds for the account in memory. */
const row = (id: string) => ({ balance: (db.query("SELECT balance FROM accounts WHERE id = ?").get(id) as { balance: number }).balance, reserved: ledger.held(id) });
const entrySum = (id: string) => (db.query("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger_entries WHERE account_id = ?").get(id) as { s: number }).s;
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
    l.reserve({ requestId: `req_${++seq}`, accountId, endpoint: "/v1/chat/completions", model: "m", budget, price });

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
    ledger.reserve({ requestId: `req_${++seq}`, accountId, endpoint: "/v1/chat/completions", model: "m", budget, price: cachePrice, priceNote: "price per 1M USD: input 10, cached input 1, cache write 20, output 30" });
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
