import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { Accounts } from "../accounts/accounts";
import { Ledger, MAX_BALANCE } from "./ledger";

let dir: string;
let db: Store;
let ledger: Ledger;
let accounts: Accounts;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sy-ledger-"));
  db = openStore(dir);
  ledger = new Ledger(db);
  accounts = new Accounts(db);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const sumEntries = (id: string) =>
  (db.query("SELECT COALESCE(SUM(amount),0) AS s FROM ledger_entries WHERE account_id = ?").get(id) as { s: number }).s;

describe("Ledger", () => {
  test("reserve refuses beyond the available balance and settle charges exactly once", async () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 1000, "seed");
    expect(ledger.reserve({ requestId: "r1", accountId: a.id, amount: 600, endpoint: "chat", model: "m" })).toEqual({ ok: true });
    expect(ledger.reserve({ requestId: "r2", accountId: a.id, amount: 600, endpoint: "chat", model: "m" })).toEqual({ ok: false, available: 400 });
    const s1 = await ledger.settle({ requestId: "r1", amount: 250, serviceTier: "default", inputTokens: 3 });
    const s2 = await ledger.settle({ requestId: "r1", amount: 250, serviceTier: "default" });
    expect(s1).toEqual({ requestId: "r1", charged: 250, balanceAfter: 750 });
    expect(s2).toEqual(s1);
    const acct = accounts.mustGet(a.id);
    expect([acct.balance, acct.reserved]).toEqual([750, 0]);
    expect(sumEntries(a.id)).toBe(750);
  });

  test("release voids the hold and charges nothing", () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 1000, "seed");
    ledger.reserve({ requestId: "r1", accountId: a.id, amount: 1000, endpoint: "chat", model: "m" });
    ledger.release("r1");
    ledger.release("r1");
    expect(accounts.mustGet(a.id).reserved).toBe(0);
    expect(accounts.mustGet(a.id).balance).toBe(1000);
  });

  test("a charge above the hold is capped so the balance never goes negative", async () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 100, "seed");
    ledger.reserve({ requestId: "r1", accountId: a.id, amount: 100, endpoint: "chat", model: "m" });
    const s = await ledger.settle({ requestId: "r1", amount: 500, serviceTier: "default" });
    expect(s.charged).toBe(100);
    expect(accounts.mustGet(a.id).balance).toBe(0);
  });

  test("ledger entries are immutable", () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 100, "seed");
    expect(() => db.run("UPDATE ledger_entries SET amount = 1")).toThrow(/immutable/);
    expect(() => db.run("DELETE FROM ledger_entries")).toThrow(/immutable/);
  });

  test("deductions cannot dig into reserved money", () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 100, "seed");
    ledger.reserve({ requestId: "r1", accountId: a.id, amount: 80, endpoint: "chat", model: "m" });
    expect(() => ledger.adjust(a.id, -30, "x")).toThrow(/exceeds the available balance/);
    ledger.adjust(a.id, -20, "x");
    expect(accounts.mustGet(a.id).balance).toBe(80);
  });

  test("releaseAbandoned voids every pending hold after a crash", () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 100, "seed");
    ledger.reserve({ requestId: "r1", accountId: a.id, amount: 60, endpoint: "chat", model: "m" });
    expect(ledger.releaseAbandoned()).toBe(1);
    expect(accounts.mustGet(a.id).reserved).toBe(0);
  });

  test("many settlements in one turn share transactions (group commit)", async () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 1_000_000, "seed");
    for (let i = 0; i < 100; i++) ledger.reserve({ requestId: `r${i}`, accountId: a.id, amount: 10, endpoint: "chat", model: "m" });
    await Promise.all(Array.from({ length: 100 }, (_, i) => ledger.settle({ requestId: `r${i}`, amount: 7, serviceTier: "default" })));
    expect(ledger.commitStats.writes).toBe(100);
    expect(ledger.commitStats.batches).toBeLessThan(5);
    expect(accounts.mustGet(a.id).balance).toBe(1_000_000 - 700);
    expect(sumEntries(a.id)).toBe(1_000_000 - 700);
  });
});

describe("Ledger: a settle coalesced with its still-queued hold", () => {
  const hold = (a: string, requestId: string, amount: number) =>
    ledger.reserve({ requestId, accountId: a, amount, endpoint: "chat", model: "m" });
  const holdRow = (requestId: string) =>
    db.query("SELECT account_id, amount, endpoint, model, state, closed_at IS NOT NULL AS closed FROM holds WHERE request_id = ?").get(requestId);
  const charges = (a: string) =>
    db.query("SELECT request_id, amount, balance_after, service_tier, input_tokens, output_tokens, reason FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY id").all(a);
  /** Lets the queued hold write commit before the settle comes (the uncoalesced path). */
  const holdWritten = () => new Promise<void>((r) => setImmediate(r));

  // Each case: balance seeded, another request's hold still in flight, this hold, the charge asked.
  test.each([
    ["an ordinary charge", 1000, 300, 400, 250],
    ["a charge above the hold", 1000, 0, 400, 700],
    ["a charge capped at what others do not hold", 1000, 500, 400, 800],
    ["a zero charge", 1000, 0, 400, 0],
  ])("%s ends exactly as insert → post would", async (_name, seed, other, amount, charge) => {
    const results = [];
    for (const coalesce of [false, true]) {
      const a = accounts.create(coalesce ? "coalesced" : "written first");
      ledger.adjust(a.id, seed, "seed");
      if (other) hold(a.id, `other-${coalesce}`, other);
      expect(hold(a.id, `r-${coalesce}`, amount)).toEqual({ ok: true });
      if (!coalesce) await holdWritten();
      const before = ledger.commitStats.coalesced;
      const s = await ledger.settle({ requestId: `r-${coalesce}`, amount: charge, serviceTier: "default", inputTokens: 5, outputTokens: 6 });
      expect(ledger.commitStats.coalesced - before).toBe(coalesce ? 1 : 0);
      const acct = accounts.mustGet(a.id);
      results.push({
        settlement: { charged: s.charged, balanceAfter: s.balanceAfter },
        account: { balance: acct.balance, reserved: acct.reserved },
        hold: { ...(holdRow(`r-${coalesce}`) as object), account_id: undefined },
        charges: (charges(a.id) as { request_id: string }[]).map((c) => ({ ...c, request_id: undefined })),
        pending: ledger.pendingHolds(),
      });
      if (other) ledger.release(`other-${coalesce}`);
    }
    expect(results[1]).toEqual(results[0]!);
    expect(results[0]!.hold).toMatchObject({ state: "posted", closed: 1, amount });
    expect(results[0]!.account.reserved).toBe(other);
  });

  test("charges above their holds never spend another coalesced hold (same batch), exactly as insert → post", async () => {
    const results = [];
    for (const coalesce of [false, true]) {
      const a = accounts.create(coalesce ? "coalesced" : "written first");
      ledger.adjust(a.id, 1000, "seed");
      hold(a.id, `a-${coalesce}`, 600);
      hold(a.id, `b-${coalesce}`, 400);
      if (!coalesce) await holdWritten();
      const before = ledger.commitStats.coalesced;
      const [b, x] = await Promise.all([
        ledger.settle({ requestId: `b-${coalesce}`, amount: 700, serviceTier: "default" }),
        ledger.settle({ requestId: `a-${coalesce}`, amount: 600, serviceTier: "default" }),
      ]);
      expect(ledger.commitStats.coalesced - before).toBe(coalesce ? 2 : 0);
      const acct = accounts.mustGet(a.id);
      results.push({ b: b.charged, a: x.charged, balance: acct.balance, reserved: acct.reserved });
    }
    expect(results[0]).toEqual({ b: 400, a: 600, balance: 0, reserved: 0 });
    expect(results[1]).toEqual(results[0]!);
  });

  test("a settle whose write fails leaves the hold pending for release(), exactly as insert → post", async () => {
    db.run("CREATE TEMP TRIGGER refuse_charge BEFORE INSERT ON ledger_entries WHEN NEW.request_id LIKE 'boom-%' BEGIN SELECT RAISE(ABORT, 'disk says no'); END");
    const results = [];
    for (const coalesce of [false, true]) {
      const a = accounts.create(coalesce ? "coalesced" : "written first");
      ledger.adjust(a.id, 1000, "seed");
      hold(a.id, `boom-${coalesce}`, 400);
      if (!coalesce) await holdWritten();
      await expect(ledger.settle({ requestId: `boom-${coalesce}`, amount: 100, serviceTier: "default" })).rejects.toThrow(/disk says no/);
      const pendingBefore = { row: (holdRow(`boom-${coalesce}`) as { state: string }).state, reserved: accounts.mustGet(a.id).reserved };
      ledger.release(`boom-${coalesce}`);
      const acct = accounts.mustGet(a.id);
      results.push({ pendingBefore, row: (holdRow(`boom-${coalesce}`) as { state: string }).state, balance: acct.balance, reserved: acct.reserved, pending: ledger.pendingHolds(), charges: charges(a.id).length });
    }
    expect(results[0]).toEqual({ pendingBefore: { row: "pending", reserved: 400 }, row: "voided", balance: 1000, reserved: 0, pending: 0, charges: 0 });
    expect(results[1]).toEqual(results[0]!);
  });

  test("a second settle in the same turn returns the first charge, never a second", async () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 1000, "seed");
    hold(a.id, "r1", 400);
    const [s1, s2] = await Promise.all([
      ledger.settle({ requestId: "r1", amount: 100, serviceTier: "default" }),
      ledger.settle({ requestId: "r1", amount: 300, serviceTier: "default" }),
    ]);
    expect(s1).toEqual({ requestId: "r1", charged: 100, balanceAfter: 900 });
    expect(s2).toEqual(s1);
    expect(charges(a.id)).toHaveLength(1);
    expect(sumEntries(a.id)).toBe(900);
  });

  test("until the charge is committed the hold still counts: nobody else can spend it", async () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 1000, "seed");
    hold(a.id, "r1", 700);
    const settling = ledger.settle({ requestId: "r1", amount: 100, serviceTier: "default" });
    expect(ledger.pendingHolds()).toBe(1);
    expect(hold(a.id, "r2", 400)).toEqual({ ok: false, available: 300 });
    await settling;
    expect(ledger.pendingHolds()).toBe(0);
    expect(hold(a.id, "r2", 900)).toEqual({ ok: true });
  });

  test("a release of a queued hold is not coalesced: the hold is written, then voided", async () => {
    const a = accounts.create("t");
    ledger.adjust(a.id, 1000, "seed");
    hold(a.id, "r1", 400);
    ledger.release("r1");
    expect(holdRow("r1")).toMatchObject({ state: "voided" });
    await expect(ledger.settle({ requestId: "r1", amount: 100, serviceTier: "default" })).rejects.toMatchObject({ detail: expect.stringMatching(/without a pending hold/) });
    expect(accounts.mustGet(a.id)).toMatchObject({ balance: 1000, reserved: 0 });
  });
});

describe("Ledger.adjust bounds", () => {
  test("a credit that would pass the maximum balance is refused and changes nothing", () => {
    const a = accounts.create("rich");
    ledger.adjust(a.id, MAX_BALANCE, "seed");
    expect(() => ledger.adjust(a.id, 1, "one more unit")).toThrow(/may not exceed 9000000 USD/);
    expect(accounts.mustGet(a.id).balance).toBe(MAX_BALANCE);
    expect(sumEntries(a.id)).toBe(MAX_BALANCE);
  });
});
