import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { Accounts } from "../accounts/accounts";
import { Ledger } from "./ledger";

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
