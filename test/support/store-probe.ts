/**
 * Reads a running server's store directly, the same way over SQLite and PostgreSQL, so one test
 * can check what a request left behind in either (balances, holds, charges). Amounts are integer
 * units; charge amounts are negative as in the ledger.
 */
import { SQL } from "bun";
import type { Database } from "bun:sqlite";
import type { Ledger } from "../../src/billing/ledger";

export interface HoldRow {
  amount: number;
  state: string;
  account_id: string;
}

export interface ChargeRow {
  request_id: string;
  account_id: string;
  amount: number;
  input_tokens: number;
  output_tokens: number;
  /** Of input_tokens, read from and written to the upstream's prompt cache. */
  cached_tokens: number;
  cache_write_tokens: number;
  /** Units the prompt cache took off the charge. */
  cache_saved: number;
  characters: number;
  reason: string | null;
  model: string | null;
  endpoint: string | null;
}

export interface StoreProbe {
  balance(accountId: string): Promise<{ balance: number; reserved: number }>;
  /** Σ ledger entry amounts of the account (credits, debits, charges). */
  ledgerSum(accountId: string): Promise<number>;
  counts(accountId: string): Promise<{ entries: number; charges: number; pendingHolds: number }>;
  hold(requestId: string): Promise<HoldRow | null>;
  charge(requestId: string): Promise<ChargeRow | null>;
  /** The account's charges, oldest first. */
  charges(accountId: string): Promise<ChargeRow[]>;
  /** How many of the account's holds are in each state, by state name. */
  holdStates(accountId: string): Promise<Record<string, number>>;
  /** The written request_outcomes row of a request (status, end, account), or null. */
  outcome(requestId: string): Promise<{ http_status: number; outcome: string; account_id: string } | null>;
  /** Ledger entries of every account together. */
  entryCount(): Promise<number>;
  /** Every row of api_keys, as stored. */
  apiKeyRows(): Promise<Record<string, unknown>[]>;
  /** Rows of a stored response, and of its items (0 when it was never stored or was deleted). */
  storedResponse(id: string): Promise<{ rows: number; items: number }>;
  /** The account's stored responses, oldest first, with their sizes in bytes. */
  storedResponses(accountId: string): Promise<{ id: string; size: number }[]>;
  close(): Promise<void>;
}

const CHARGE = "request_id, account_id, amount, input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved, characters, reason, model, endpoint";

export function sqliteProbe(db: () => Database): StoreProbe {
  const one = <T>(sql: string, ...args: (string | number)[]) => db().query(sql).get(...args) as T;
  const all = <T>(sql: string, ...args: (string | number)[]) => db().query(sql).all(...args) as T[];
  return {
    async balance(id) {
      return one("SELECT balance, reserved FROM accounts WHERE id = ?", id);
    },
    async ledgerSum(id) {
      return one<{ s: number }>("SELECT COALESCE(SUM(amount), 0) AS s FROM ledger_entries WHERE account_id = ?", id).s;
    },
    async counts(id) {
      return one(
        `SELECT (SELECT COUNT(*) FROM ledger_entries WHERE account_id = ?1) AS entries,
                (SELECT COUNT(*) FROM ledger_entries WHERE account_id = ?1 AND kind = 'charge') AS charges,
                (SELECT COUNT(*) FROM holds WHERE account_id = ?1 AND state = 'pending') AS pendingHolds`,
        id,
      );
    },
    async hold(requestId) {
      return one("SELECT amount, state, account_id FROM holds WHERE request_id = ?", requestId);
    },
    async charge(requestId) {
      return one(`SELECT ${CHARGE} FROM ledger_entries WHERE request_id = ? AND kind = 'charge'`, requestId);
    },
    async charges(id) {
      return all(`SELECT ${CHARGE} FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY id`, id);
    },
    async holdStates(id) {
      const rows = all<{ state: string; n: number }>("SELECT state, COUNT(*) AS n FROM holds WHERE account_id = ? GROUP BY state", id);
      return Object.fromEntries(rows.map((r) => [r.state, r.n]));
    },
    async outcome(requestId) {
      return one("SELECT http_status, outcome, account_id FROM request_outcomes WHERE request_id = ?", requestId);
    },
    async entryCount() {
      return one<{ n: number }>("SELECT COUNT(*) AS n FROM ledger_entries").n;
    },
    async apiKeyRows() {
      return all("SELECT * FROM api_keys");
    },
    async storedResponse(id) {
      return one("SELECT (SELECT COUNT(*) FROM responses WHERE id = ?1) AS rows, (SELECT COUNT(*) FROM response_items WHERE response_id = ?1) AS items", id);
    },
    async storedResponses(accountId) {
      return all("SELECT id, size FROM responses WHERE account_id = ? ORDER BY created_at, rowid", accountId);
    },
    async close() {},
  };
}

const num = (v: unknown) => (v === null || v === undefined ? v : Number(v)) as number;

function chargeRow(r: Record<string, unknown>): ChargeRow {
  return {
    request_id: r.request_id as string, account_id: r.account_id as string, amount: num(r.amount), input_tokens: num(r.input_tokens),
    output_tokens: num(r.output_tokens), cached_tokens: num(r.cached_tokens), cache_write_tokens: num(r.cache_write_tokens), cache_saved: num(r.cache_saved),
    characters: num(r.characters), reason: (r.reason as string | null) ?? null,
    model: (r.model as string | null) ?? null, endpoint: (r.endpoint as string | null) ?? null,
  };
}

/** Its own small pool on the server's database: reads never queue behind the server's. */
export function pgProbe(url: string): StoreProbe {
  const sql = new SQL({ url, max: 2 });
  return {
    async balance(id) {
      const [r] = (await sql`SELECT balance, reserved FROM accounts WHERE id = ${id}`) as Record<string, unknown>[];
      return { balance: num(r!.balance), reserved: num(r!.reserved) };
    },
    async ledgerSum(id) {
      const [r] = (await sql`SELECT COALESCE(SUM(amount), 0)::text AS s FROM ledger_entries WHERE account_id = ${id}`) as { s: string }[];
      return Number(r!.s);
    },
    async counts(id) {
      const [r] = (await sql`
        SELECT (SELECT COUNT(*) FROM ledger_entries WHERE account_id = ${id})::int AS entries,
               (SELECT COUNT(*) FROM ledger_entries WHERE account_id = ${id} AND kind = 'charge')::int AS charges,
               (SELECT COUNT(*) FROM holds WHERE account_id = ${id} AND state = 'pending')::int AS "pendingHolds"`) as {
        entries: number; charges: number; pendingHolds: number;
      }[];
      return r!;
    },
    async hold(requestId) {
      const [r] = (await sql`SELECT amount, state, account_id FROM holds WHERE request_id = ${requestId}`) as Record<string, unknown>[];
      return r ? { amount: num(r.amount), state: r.state as string, account_id: r.account_id as string } : null;
    },
    async charge(requestId) {
      const [r] = (await sql.unsafe(`SELECT ${CHARGE} FROM ledger_entries WHERE request_id = $1 AND kind = 'charge'`, [requestId])) as Record<string, unknown>[];
      return r ? chargeRow(r) : null;
    },
    async charges(id) {
      const rows = (await sql.unsafe(`SELECT ${CHARGE} FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' ORDER BY id`, [id])) as Record<string, unknown>[];
      return rows.map(chargeRow);
    },
    async holdStates(id) {
      const rows = (await sql`SELECT state, COUNT(*)::int AS n FROM holds WHERE account_id = ${id} GROUP BY state`) as { state: string; n: number }[];
      return Object.fromEntries(rows.map((r) => [r.state, r.n]));
    },
    async outcome(requestId) {
      const [r] = (await sql`SELECT http_status, outcome, account_id FROM request_outcomes WHERE request_id = ${requestId}`) as {
        http_status: number; outcome: string; account_id: string;
      }[];
      return r ?? null;
    },
    async entryCount() {
      const [r] = (await sql`SELECT COUNT(*)::int AS n FROM ledger_entries`) as { n: number }[];
      return r!.n;
    },
    async apiKeyRows() {
      return (await sql`SELECT * FROM api_keys`) as Record<string, unknown>[];
    },
    async storedResponse(id) {
      const [r] = (await sql`
        SELECT (SELECT COUNT(*) FROM responses WHERE id = ${id})::int AS rows,
               (SELECT COUNT(*) FROM response_items WHERE response_id = ${id})::int AS items`) as { rows: number; items: number }[];
      return r!;
    },
    async storedResponses(accountId) {
      const rows = (await sql`SELECT id, size FROM responses WHERE account_id = ${accountId} ORDER BY created_at, id`) as { id: string; size: unknown }[];
      return rows.map((r) => ({ id: r.id, size: Number(r.size) }));
    },
    async close() {
      await sql.close();
    },
  };
}

function shippingFirst(store: StoreProbe, ship: () => Promise<unknown>): StoreProbe {
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(store) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    out[name] = name === "close" ? f : async (...args: unknown[]) => (await ship(), f(...args));
  }
  return out as unknown as StoreProbe;
}

/**
 * A probe that also sees what the server holds in memory (holds are not written any more,
 * billing/hold-book.ts): `reserved` and pending holds include the ledger's open holds, and a
 * hold's state is the ledger's for the holds it took (the store's for direct ones).
 */
export function liveProbe(store: StoreProbe, ledger: Ledger, ship?: () => Promise<unknown>): StoreProbe {
  // On PostgreSQL the charges this server journaled reach the database first: a read sees them.
  const base = ship ? shippingFirst(store, ship) : store;
  const holds = new Map<string, HoldRow>();
  ledger.onHold((e) => holds.set(e.requestId, { amount: e.amount, state: e.state, account_id: e.accountId }));
  const pendingOf = (accountId: string) => [...holds.values()].filter((h) => h.account_id === accountId && h.state === "pending").length;
  return {
    ...base,
    async balance(id) {
      const b = await base.balance(id);
      return { balance: b.balance, reserved: b.reserved + ledger.held(id) };
    },
    async counts(id) {
      const c = await base.counts(id);
      return { ...c, pendingHolds: Math.max(c.pendingHolds, pendingOf(id)) };
    },
    async hold(requestId) {
      return holds.get(requestId) ?? (await base.hold(requestId));
    },
    async holdStates(id) {
      const states: Record<string, number> = {};
      for (const h of holds.values()) if (h.account_id === id) states[h.state] = (states[h.state] ?? 0) + 1;
      return Object.keys(states).length > 0 ? states : base.holdStates(id);
    },
  };
}
