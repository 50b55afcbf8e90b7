/**
 * A key's spend limit is enforced by the hold itself (docs/operate.md, "Keys: limits, expiry, models"): a
 * hold must fit both the account's available balance and what the key's limit has left in its
 * period, decided in the same write; the charge counts against both. On both stores, through the
 * real Ledger over the real store, with the ledger's clock moved instead of waiting.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ledger } from "../src/billing/ledger";
import { Log } from "../src/log";
import { DomainError } from "../src/errors";
import { ApiKeys, NO_CONTROLS, type KeyControls, type KeyRecords } from "../src/accounts/api-keys";
import type { LedgerStore } from "../src/billing/ledger-store";
import type { Consumption } from "../src/billing/ledger-store";
import type { LimitReset } from "../src/billing/key-periods";
import { openStore, type Store } from "../src/store/database";
import { SqliteLedgerStore } from "../src/store/sqlite/ledger-store";
import { SqliteKeyRecords } from "../src/store/sqlite/accounts";
import { PgKeyRecords } from "../src/store/postgres/accounts";
import { pgFixture, type PgFixture } from "./support/postgres-store";
import { nextReset } from "../src/billing/key-periods";
import { describeEachStore, type TestStore } from "./support/stores";

/** 1 unit per input token, 3 per output token. */
const price = (u: Consumption) => (u.inputTokens ?? 0) + 3 * (u.outputTokens ?? 0);

interface Rig {
  store: LedgerStore;
  keys: ApiKeys;
  /** Reads a key's running figures straight from the store. */
  keyRow(id: string): Promise<{ period_start: number; period_spent: number; reserved: number; spent: number }>;
  /** Σ of the charges of the key's holds whose hold period is `period`. */
  chargesInPeriod(keyId: string, period: number): Promise<number>;
  openAccount(id: string, credits: number): Promise<void>;
  close(): Promise<void>;
}

async function rig(kind: TestStore): Promise<Rig> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-keylimits-"));
    const db: Store = openStore(dir, { busyTimeoutMs: 0 });
    const store = new SqliteLedgerStore(db, { fsync: (_fd, cb) => setImmediate(() => cb(null)) });
    const records: KeyRecords = new SqliteKeyRecords(db);
    return {
      store,
      keys: new ApiKeys(records),
      async keyRow(id) {
        return db.query("SELECT period_start, period_spent, reserved, spent FROM api_keys WHERE id = ?").get(id) as any;
      },
      async chargesInPeriod(keyId, period) {
        // Holds are not written: a charge carries its key and when it counts for its periods.
        const { limit_reset } = db.query("SELECT limit_reset FROM api_keys WHERE id = ?").get(keyId) as { limit_reset: LimitReset | null };
        const end = period === 0 ? Number.MAX_SAFE_INTEGER : nextReset(limit_reset, period * 1000)!;
        return (db.query(
          `SELECT COALESCE(SUM(-amount), 0) AS s FROM ledger_entries WHERE kind = 'charge' AND key_id = ? AND counted_at >= ? AND counted_at < ?`,
        ).get(keyId, period, end) as { s: number }).s;
      },
      openAccount: (id, credits) => store.createAccount({ id, name: id, createdAt: 0 }, credits, "test"),
      async close() {
        store.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const pg: PgFixture = await pgFixture();
  const records = new PgKeyRecords(pg.a.db);
  const ask = (q: (sql: any) => any) => pg.a.db.ask(q) as Promise<any[]>;
  return {
    store: pg.a.ledger,
    keys: new ApiKeys(records),
    async keyRow(id) {
      const [r] = await ask((sql) => sql`SELECT period_start, period_spent, reserved, spent FROM api_keys WHERE id = ${id}`);
      return { period_start: Number(r.period_start), period_spent: Number(r.period_spent), reserved: Number(r.reserved), spent: Number(r.spent) };
    },
    async chargesInPeriod(keyId, period) {
      const [r] = await ask((sql) => sql`
        SELECT COALESCE(SUM(-e.amount), 0)::text AS s FROM ledger_entries e JOIN holds h ON h.request_id = e.request_id
         WHERE e.kind = 'charge' AND h.key_id = ${keyId} AND h.period_start = ${period}`);
      return Number(r.s);
    },
    openAccount: (id, credits) => pg.a.ledger.createAccount({ id, name: id, createdAt: 0 }, credits, "test"),
    close: () => pg.close(),
  };
}

describeEachStore("a key's spend limit is enforced by its holds", (kind) => {
  let r: Rig;
  /** The ledger's clock (ms), moved by the tests. */
  let now = Date.UTC(2026, 10, 25, 12, 0, 0); // a Wednesday
  let ledger: Ledger;
  let n = 0;

  beforeAll(async () => {
    r = await rig(kind);
    ledger = new Ledger(r.store, new Log("silent"), { now: () => now });
  }, 60_000);
  afterAll(async () => {
    ledger.close();
    await r.close();
  });

  async function keyFor(credits: number, controls: Partial<KeyControls>) {
    const account = `acct_kl_${++n}`;
    await r.openAccount(account, credits);
    const k = await r.keys.create(account, "k", { ...NO_CONTROLS, ...controls });
    return { account, keyId: k.id };
  }

  /** One request: reserve its budget, settle `used` of it (or nothing), release. */
  async function request(account: string, keyId: string, reset: LimitReset | null, budget: Consumption, used: Consumption | null) {
    const hold = await ledger.reserve({
      requestId: `req_kl_${++n}`, accountId: account, endpoint: "/v1/chat/completions", model: "m", budget, price,
      key: { id: keyId, limitReset: reset },
    });
    try {
      if (used) return (await hold.settle({ ...used, serviceTier: "default" })).charged;
      return 0;
    } finally {
      await hold.release();
    }
  }

  const refusal = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return e as DomainError;
    }
    throw new Error("expected a refusal");
  };

  test("60 concurrent requests on one key never spend past its limit: exact integer sums, the rest refused 402 key_limit_exceeded", async () => {
    // Holds of 100 units, each charged 70: a limit of 1,000 admits exactly 10 holds at once.
    const { account, keyId } = await keyFor(1_000_000, { spend_limit: 1_000 });
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, () => request(account, keyId, null, { inputTokens: 10, outputTokens: 30 }, { inputTokens: 10, outputTokens: 20 })),
    );
    const charged = results.filter((x) => x.status === "fulfilled").map((x) => (x as PromiseFulfilledResult<number>).value);
    const refused = results.filter((x) => x.status === "rejected").map((x) => (x as PromiseRejectedResult).reason as DomainError);
    expect(charged.length + refused.length).toBe(60);
    for (const e of refused) {
      expect(e).toBeInstanceOf(DomainError);
      expect(e.code).toBe("key_limit_exceeded");
      expect(e.kind).toBe("insufficient_credits");
      expect(e.message).toContain("0.000001 USD");
      expect(e.message).toContain("never resets");
    }
    const total = charged.reduce((a, b) => a + b, 0);
    expect(charged.every((c) => c === 70)).toBe(true);
    expect(total).toBeLessThanOrEqual(1_000);
    // Sequential on the key's row: at least the first 10 fit (nothing is refused while room is left).
    expect(charged.length).toBeGreaterThanOrEqual(10);
    const row = await r.keyRow(keyId);
    expect(row).toEqual({ period_start: 0, period_spent: total, reserved: 0, spent: total });
    expect(await r.chargesInPeriod(keyId, 0)).toBe(total);
    // And what is left is exactly what the limit allows: 1,000 − total, so one more hold of 100 fits iff ≥ 100 remain.
    const more = await Promise.allSettled([request(account, keyId, null, { inputTokens: 10, outputTokens: 30 }, null)]);
    expect(more[0]!.status === "fulfilled").toBe(1_000 - total >= 100);
  });

  test("a refusal leaves nothing behind: the account's reserve is taken back in the same write", async () => {
    const { account, keyId } = await keyFor(1_000_000, { spend_limit: 50 });
    const e = await refusal(request(account, keyId, null, { inputTokens: 100 }, { inputTokens: 1 }));
    expect(e.code).toBe("key_limit_exceeded");
    expect(await r.store.pendingHolds()).toBe(0);
    expect((await r.keyRow(keyId)).reserved).toBe(0);
    // The account's available balance is untouched: a hold as large as the whole balance still fits with a key without a limit.
    const free = await r.keys.create(account, "free");
    expect(await request(account, free.id, null, { inputTokens: 1_000_000 }, { inputTokens: 1_000_000 })).toBe(1_000_000);
  });

  test("the account's balance still binds a key whose limit is larger: 402 insufficient_credits", async () => {
    const { account, keyId } = await keyFor(300, { spend_limit: 1_000_000 });
    expect(await request(account, keyId, null, { inputTokens: 300 }, { inputTokens: 300 })).toBe(300);
    const e = await refusal(request(account, keyId, null, { inputTokens: 1 }, null));
    expect(e.code).toBe("insufficient_credits");
    expect((await r.keyRow(keyId)).reserved).toBe(0);
  });

  test("a daily limit rolls over at 00:00 UTC: spent up, refused, the clock passes midnight, allowed again", async () => {
    now = Date.UTC(2026, 10, 25, 23, 59, 0);
    const { account, keyId } = await keyFor(1_000_000, { spend_limit: 500, limit_reset: "daily" });
    expect(await request(account, keyId, "daily", { inputTokens: 500 }, { inputTokens: 500 })).toBe(500);
    const e = await refusal(request(account, keyId, "daily", { inputTokens: 1 }, null));
    expect(e.code).toBe("key_limit_exceeded");
    expect(e.message).toContain("(daily)");
    expect(e.message).toContain("resets at 2026-11-26T00:00:00.000Z");
    const day1 = Date.UTC(2026, 10, 25) / 1000;
    expect((await r.keyRow(keyId)).period_start).toBe(day1);

    now = Date.UTC(2026, 10, 26, 0, 0, 1);
    expect(await request(account, keyId, "daily", { inputTokens: 400 }, { inputTokens: 400 })).toBe(400);
    const day2 = Date.UTC(2026, 10, 26) / 1000;
    expect(await r.keyRow(keyId)).toEqual({ period_start: day2, period_spent: 400, reserved: 0, spent: 900 });
    expect(await r.chargesInPeriod(keyId, day1)).toBe(500);
    expect(await r.chargesInPeriod(keyId, day2)).toBe(400);
  });

  test("a hold reserved before the rollover and charged after it counts in its own period, never pushing the new one past the limit", async () => {
    now = Date.UTC(2026, 10, 29, 23, 0, 0); // Sunday: the week ends at midnight
    const { account, keyId } = await keyFor(1_000_000, { spend_limit: 600, limit_reset: "weekly" });
    const before = await ledger.reserve({
      requestId: `req_kl_${++n}`, accountId: account, endpoint: "/v1/chat/completions", model: "m", budget: { inputTokens: 600 }, price,
      key: { id: keyId, limitReset: "weekly" },
    });
    now = Date.UTC(2026, 10, 30, 0, 0, 5); // Monday: a new week
    // The old hold is still held: the new week has 0 left until it ends.
    expect((await refusal(request(account, keyId, "weekly", { inputTokens: 1 }, null))).code).toBe("key_limit_exceeded");
    expect((await before.settle({ inputTokens: 600, serviceTier: "default" })).charged).toBe(600);
    const week1 = Date.UTC(2026, 10, 23) / 1000;
    const week2 = Date.UTC(2026, 10, 30) / 1000;
    // Charged after the rollover, it belongs to the week it was reserved in (the refusal rolled nothing over).
    expect(await r.keyRow(keyId)).toEqual({ period_start: week1, period_spent: 600, reserved: 0, spent: 600 });
    // The new week's first hold starts its period afresh.
    expect(await request(account, keyId, "weekly", { inputTokens: 600 }, { inputTokens: 600 })).toBe(600);
    expect(await r.keyRow(keyId)).toEqual({ period_start: week2, period_spent: 600, reserved: 0, spent: 1_200 });
    expect(await r.chargesInPeriod(keyId, week1)).toBe(600);
    expect(await r.chargesInPeriod(keyId, week2)).toBe(600);
  });

  test("a monthly limit resets on the 1st, 00:00 UTC; a released hold gives its share of the limit back", async () => {
    now = Date.UTC(2026, 11, 31, 10, 0, 0);
    const { account, keyId } = await keyFor(1_000_000, { spend_limit: 100, limit_reset: "monthly" });
    expect(await request(account, keyId, "monthly", { inputTokens: 100 }, null)).toBe(0); // released unbilled
    expect(await request(account, keyId, "monthly", { inputTokens: 100 }, { inputTokens: 100 })).toBe(100);
    const e = await refusal(request(account, keyId, "monthly", { inputTokens: 1 }, null));
    expect(e.message).toContain("resets at 2027-01-01T00:00:00.000Z");
    now = Date.UTC(2027, 0, 1, 0, 0, 0);
    expect(await request(account, keyId, "monthly", { inputTokens: 100 }, { inputTokens: 100 })).toBe(100);
  });
});

describe("periods", () => {
  test("UTC calendar periods: day from 00:00, ISO week from Monday, month from the 1st", async () => {
    const { periodStarts, nextReset } = await import("../src/billing/key-periods");
    const wed = Date.UTC(2026, 10, 25, 15, 30);
    expect(periodStarts(wed)).toEqual({ day: Date.UTC(2026, 10, 25) / 1000, week: Date.UTC(2026, 10, 23) / 1000, month: Date.UTC(2026, 10, 1) / 1000 });
    // A Sunday belongs to the week that began the Monday before.
    expect(periodStarts(Date.UTC(2026, 10, 29, 23, 59)).week).toBe(Date.UTC(2026, 10, 23) / 1000);
    expect(nextReset("weekly", wed)).toBe(Date.UTC(2026, 10, 30) / 1000);
    expect(nextReset("monthly", Date.UTC(2026, 11, 31))).toBe(Date.UTC(2027, 0, 1) / 1000);
    expect(nextReset(null, wed)).toBeNull();
  });
});
