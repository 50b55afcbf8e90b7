/**
 * A batch's charges take their amounts from running figures written once before the commit
 * (charge-batch.ts): what they write must be exactly what one transaction per charge writes. And
 * the figures grants are checked against, cached (grant-figures.ts), must follow every write.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../database";
import { SqliteLedgerStore } from "./ledger-store";
import { HoldBook } from "../../billing/hold-book";
import type { PostRequest } from "../../billing/ledger-store";

const DAY = 86_400;
const opened: { dir: string; db: Store; store: SqliteLedgerStore }[] = [];

afterEach(() => {
  for (const o of opened.splice(0)) {
    o.store.close();
    o.db.close();
    rmSync(o.dir, { recursive: true, force: true });
  }
});

async function open(maxBatch?: number) {
  const dir = mkdtempSync(join(tmpdir(), "charge-batch-"));
  const db = openStore(dir, { busyTimeoutMs: 0 });
  const store = new SqliteLedgerStore(db, maxBatch ? { maxBatch } : {});
  opened.push({ dir, db, store });
  for (const id of ["acct_a", "acct_b"]) await store.createAccount({ id, name: id, createdAt: 0 }, 10_000, "opening");
  db.run("INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, spend_limit, limit_reset) VALUES ('key_a', 'acct_a', 'k', 'p', 'ha', 0, 1000000, 'daily')");
  db.run("INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, spend_limit, limit_reset) VALUES ('key_b', 'acct_b', 'k', 'p', 'hb', 0, NULL, NULL)");
  return { db, store };
}

let seq = 0;
const charge = (accountId: string, keyId: string | null, amount: number, holdCreatedAt: number): PostRequest => ({
  requestId: `req_${String(seq++).padStart(8, "0")}`, accountId, keyId, amount, holdAmount: amount, direct: false, holdCreatedAt,
  endpoint: "/v1/embeddings", model: "m", inputTokens: 1, outputTokens: 0, serviceTier: "default",
});

const state = (db: Store) => ({
  entries: db.query("SELECT account_id, kind, amount, balance_after, request_id, key_id, counted_at FROM ledger_entries ORDER BY id").all(),
  accounts: db.query("SELECT id, balance FROM accounts ORDER BY id").all(),
  keys: db.query("SELECT id, spent, period_start, period_spent FROM api_keys ORDER BY id").all(),
});

describe("charges of one batch", () => {
  test("write what one transaction per charge writes: balances after, key periods, counted times", async () => {
    // Holds of yesterday, today and the day before, in one batch: a newer period starts over,
    // an older one counts against the stored one.
    const today = Math.floor(Date.now() / 1000 / DAY) * DAY + 3600;
    const plan = [
      ["acct_a", "key_a", 100, today - DAY], ["acct_b", "key_b", 7, today], ["acct_a", "key_a", 250, today - DAY],
      ["acct_a", "key_a", 30, today], ["acct_a", null, 5, today], ["acct_a", "key_a", 40, today - 2 * DAY], ["acct_b", null, 1, today],
      ["acct_a", "key_a", 3, today],
    ] as const;
    const results: Record<string, unknown> = {};
    for (const maxBatch of [1, 512]) {
      seq = 0;
      const { db, store } = await open(maxBatch);
      const batches = store.commitStats.batches;
      const settled = await Promise.all(plan.map(([a, k, amount, at]) => store.post(charge(a, k, amount, at))));
      if (maxBatch === 512) expect(store.commitStats.batches - batches).toBe(1);
      results[maxBatch] = { settled, ...state(db) };
    }
    expect(results[512]).toEqual(results[1]!);
    const { accounts, keys, settled } = results[512] as ReturnType<typeof state> & { settled: { balanceAfter: number }[] };
    expect(settled.map((s) => s.balanceAfter)).toEqual([9900, 9993, 9650, 9620, 9615, 9575, 9992, 9572]);
    expect(accounts).toEqual([{ id: "acct_a", balance: 9572 }, { id: "acct_b", balance: 9992 }]);
    // key_a: 100 and 250 yesterday, then 30 today starts today's period; 40 of two days ago and 3
    // of today count in it.
    expect(keys[0]).toEqual({ id: "key_a", spent: 423, period_start: today - 3600, period_spent: 73 });
  });

  test("a charge that fails leaves the batch's others whole, each with its own balance", async () => {
    const { db, store } = await open();
    const posts = [charge("acct_a", "key_a", 100, 0), charge("acct_missing", null, 5, 0), charge("acct_a", "key_a", 20_000, 0), charge("acct_a", "key_a", 50, 0)];
    const results = await Promise.allSettled(posts.map((p) => store.post(p)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((results[2] as PromiseRejectedResult).reason.detail).toContain("exceeds the balance");
    expect(state(db).accounts[0]).toEqual({ id: "acct_a", balance: 9850 });
    expect(state(db).keys[0]).toMatchObject({ id: "key_a", spent: 150 });
    expect(state(db).entries.filter((e: any) => e.kind === "charge").map((e: any) => e.balance_after)).toEqual([9900, 9850]);
  });

  test("a repeated charge, in the same batch or a later one, is answered with the first and changes nothing", async () => {
    const { db, store } = await open();
    const first = charge("acct_a", "key_a", 100, 0);
    const other = charge("acct_a", "key_a", 7, 0);
    // The repeat asks for a different amount: the first charge stands.
    const [a, again, b] = await Promise.all([store.post(first), store.post({ ...first, amount: 60, holdAmount: 60 }), store.post(other)]);
    expect(a).toEqual({ charged: 100, balanceAfter: 9900, fresh: true });
    expect(again).toEqual({ charged: 100, balanceAfter: 9900, fresh: false });
    expect(b).toEqual({ charged: 7, balanceAfter: 9893, fresh: true });
    let committed = 0;
    expect(await store.post({ ...first, amount: 1, holdAmount: 1 }, () => committed++)).toEqual({ charged: 100, balanceAfter: 9900, fresh: false });
    // Its committed callback still runs: the hold it settles stops counting.
    expect(committed).toBe(1);
    expect(state(db).accounts[0]).toEqual({ id: "acct_a", balance: 9893 });
    expect(state(db).keys[0]).toMatchObject({ id: "key_a", spent: 107, period_spent: 107 });
    expect(state(db).entries.filter((e: any) => e.kind === "charge")).toHaveLength(2);
  });

  test("a credit in the middle of a batch sees the charges queued before it", async () => {
    const { db, store } = await open();
    const book = new HoldBook();
    const [first, credit, last] = await Promise.all([
      store.post(charge("acct_a", "key_a", 100, 0)), store.adjust("acct_a", 1000, "top-up", book), store.post(charge("acct_a", "key_a", 10, 0)),
    ]);
    expect([first.balanceAfter, credit.balanceAfter, last.balanceAfter]).toEqual([9900, 10_900, 10_890]);
    expect(state(db).accounts[0]).toEqual({ id: "acct_a", balance: 10_890 });
  });
});

describe("grants against cached figures", () => {
  const grant = (store: SqliteLedgerStore, book: HoldBook, amount: number, key?: string) =>
    store.grant({ requestId: `req_g${seq++}`, accountId: "acct_a", amount, endpoint: "/v1/embeddings", model: "m", createdAt: 0, ...(key ? { key: { id: key, periods: { day: 0, week: 0, month: 0 } } } : {}) }, book);

  test("see a charge as soon as it is committed", async () => {
    const { store } = await open();
    const book = new HoldBook();
    expect(grant(store, book, 10_000)).toMatchObject({ ok: true });
    book.remove(`req_g${seq - 1}`);
    await store.post(charge("acct_a", "key_a", 1, 0));
    expect(grant(store, book, 10_000)).toEqual({ ok: false, available: 9999 });
  });

  test("see credits another connection committed from the next turn on", async () => {
    const { db, store } = await open();
    const book = new HoldBook();
    expect(grant(store, book, 20_000)).toEqual({ ok: false, available: 10_000 });
    const other = openStore(join(db.filename, ".."));
    other.run("UPDATE accounts SET balance = balance + 15000 WHERE id = 'acct_a'");
    other.close();
    await new Promise((r) => setImmediate(r));
    expect(grant(store, book, 20_000)).toMatchObject({ ok: true });
  });

  test("see a key's new spend limit at once", async () => {
    const { db, store } = await open();
    const { SqliteKeyRecords } = await import("./accounts");
    const book = new HoldBook();
    expect(grant(store, book, 500, "key_a")).toMatchObject({ ok: true });
    await new SqliteKeyRecords(db).update("key_a", { spend_limit: 600 });
    expect(grant(store, book, 500, "key_a")).toEqual({ ok: false, available: 100, keyLimit: 600 });
  });
});
