/**
 * The key cache in front of a store that must be asked over the network (as PostgreSQL is): a
 * burst of requests with one uncached key asks once; a change heard while a lookup is in flight
 * (forget()) keeps that lookup's answer out of the cache. The store here is a small in-memory
 * KeyRecords whose answers arrive when the test releases them.
 */
import { expect, test } from "bun:test";
import { ApiKeys, hashKey, type KeyOwnerRow, type KeyRecords } from "./api-keys";

function slowRecords(rows: Map<string, KeyOwnerRow>) {
  let asked = 0;
  const waiting: (() => void)[] = [];
  const records: KeyRecords = {
    insert: async () => {},
    revoke: async () => true,
    listForAccount: async () => [],
    update: async () => true,
    get: async () => null,
    usageSince: async () => ({ day: 0, week: 0, month: 0 }),
    ownerByHash(hash) {
      asked++;
      // Read when asked, answered when released: an answer can be older than a change.
      const found = rows.get(hash);
      return new Promise((resolve) => waiting.push(() => resolve(found ? { ...found } : null)));
    },
  };
  return { records, asked: () => asked, answer: () => waiting.splice(0).forEach((w) => w()) };
}

const row = (key: string, disabled = 0): KeyOwnerRow => ({ id: "key_1", account_id: "acct_1", hash: hashKey(key), revoked_at: null, disabled, rate_limit_rpm: null, concurrency_limit: null,
  key_spend_limit: null, key_limit_reset: null, key_expires_at: null, key_models: null, key_rate_limit_rpm: null });

test("fifty requests with one uncached key ask the store once, and all get the owner", async () => {
  const store = slowRecords(new Map([[hashKey("sy-a"), row("sy-a")]]));
  const keys = new ApiKeys(store.records);
  const all = Array.from({ length: 50 }, () => keys.authenticate("sy-a"));
  expect(store.asked()).toBe(1);
  store.answer();
  const owners = await Promise.all(all);
  expect(owners.every((o) => o?.accountId === "acct_1")).toBe(true);
  // Cached now: answered without the store, synchronously.
  expect(keys.authenticate("sy-a")).toMatchObject({ accountId: "acct_1" });
  expect(store.asked()).toBe(1);
});

test("a change heard while a lookup is in flight keeps its (older) answer out of the cache", async () => {
  const rows = new Map([[hashKey("sy-b"), row("sy-b")]]);
  const store = slowRecords(rows);
  const keys = new ApiKeys(store.records);
  const first = keys.authenticate("sy-b");
  rows.set(hashKey("sy-b"), row("sy-b", 1)); // disabled meanwhile, and the change is announced
  keys.forget();
  const second = keys.authenticate("sy-b"); // does not join the older lookup
  expect(store.asked()).toBe(2);
  store.answer();
  expect(await first).toMatchObject({ disabled: false });
  expect(await second).toMatchObject({ disabled: true });
  const third = keys.authenticate("sy-b");
  expect(third).toMatchObject({ disabled: true });
  expect(store.asked()).toBe(2);
});
