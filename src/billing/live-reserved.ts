/**
 * `reserved` as it is now: what a store reads (holds it keeps itself — PostgreSQL's direct holds
 * and leases — or an older version's leftovers) plus what this process holds in memory for
 * requests in flight (billing/hold-book.ts). Every reader of reserved money — the admin API, the
 * dashboard, GET /v1/usage, GET /v1/key and the key lists — goes through these, so none shows a
 * figure without the holds of this process. (The CLI runs in a process of its own: it sees what
 * the store keeps.)
 */
import type { AccountRecords, AccountRow } from "../accounts/accounts";
import type { ApiKeyListing, KeyRecords } from "../accounts/api-keys";
import type { UsageRecords } from "./usage-report";

/**
 * What this process holds in memory, per account and per key, as an adjustment of what the store
 * reads. SQLite: the ledger's holds. PostgreSQL, where the store counts every instance's leases as
 * reserved: this instance's holds less its own lease (the rest of its lease is free, not spoken
 * for), and `unshipped` — charges journaled here that the database's balance does not have yet.
 */
export interface HeldFigures {
  held(accountId: string): number;
  heldByKey(keyId: string): number;
  unshipped?(accountId: string): number;
}

/** An account's stored balance and reserved amount as they stand live. */
function liveMoney(h: HeldFigures, accountId: string, stored: { balance: number; reserved: number }): { balance: number; reserved: number } {
  return { balance: stored.balance - (h.unshipped?.(accountId) ?? 0), reserved: Math.max(0, stored.reserved + h.held(accountId)) };
}

export function liveAccounts(records: AccountRecords, h: HeldFigures): AccountRecords {
  const live = (row: AccountRow): AccountRow => ({ ...row, ...liveMoney(h, row.id, row) });
  return {
    get: async (id) => {
      const row = await records.get(id);
      return row ? live(row) : null;
    },
    list: async () => (await records.list()).map(live),
    update: (id, patch) => records.update(id, patch),
  };
}

export function liveKeys(records: KeyRecords, h: HeldFigures): KeyRecords {
  const live = (k: ApiKeyListing): ApiKeyListing => ({ ...k, reserved: Math.max(0, k.reserved + h.heldByKey(k.id)) });
  return overriding(records, {
    get: async (id: string) => {
      const k = await records.get(id);
      return k ? live(k) : null;
    },
    listForAccount: async (accountId: string) => (await records.listForAccount(accountId)).map(live),
  });
}

export function liveUsage<T extends UsageRecords>(records: T, h: HeldFigures): T {
  return overriding<T>(records, {
    balance: async (accountId: string) => {
      const acct = await records.balance(accountId);
      return acct ? liveMoney(h, accountId, acct) : null;
    },
  } as Partial<T>);
}

/**
 * `records` with some methods replaced; every other member is the original's, called on the
 * original (bound), so a method that keeps state on its object (SQLite's data_version check, say)
 * keeps it there and not on a copy.
 */
function overriding<T extends object>(records: T, overrides: Partial<T>): T {
  // Bound once per method: these sit on every request's path (key lookups).
  const bound = new Map<string | symbol, unknown>();
  return new Proxy(records, {
    get(target, name) {
      if (Object.hasOwn(overrides, name)) return overrides[name as keyof T];
      const value = Reflect.get(target, name, target) as unknown;
      if (typeof value !== "function") return value;
      let f = bound.get(name);
      if (f === undefined) bound.set(name, (f = (value as (...args: unknown[]) => unknown).bind(target)));
      return f;
    },
  });
}
