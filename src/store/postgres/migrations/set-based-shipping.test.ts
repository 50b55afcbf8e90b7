/**
 * Migration 013's switchyard_post_leased against 011's, the one it replaces: the same seeded
 * random batches — charges from leases that cover them, leases too small (cut to the free
 * balance: 'reduced'), accounts with nothing free, repeats of shipped charges, unknown accounts,
 * keys with and without leases and with daily, weekly, monthly or no reset, charges whose hold
 * is in an older or newer period than the key's — shipped into two databases, one per function.
 * Every answer, every account, key and lease row and every ledger entry must be the same.
 */
import { expect, test } from "bun:test";
import { SQL } from "bun";
import { testDatabase } from "../../../../test/support/postgres";
import { rng } from "../../../../test/support/seeded-random";
import { migratePostgres } from "../migrate";
import { PG_MIGRATIONS } from "./index";


const ACCOUNTS = ["acct_a", "acct_b", "acct_c"];
const KEYS = [
  { id: "key_a1", account: "acct_a", reset: null },
  { id: "key_a2", account: "acct_a", reset: "daily" },
  { id: "key_b1", account: "acct_b", reset: "weekly" },
  { id: "key_c1", account: "acct_c", reset: "monthly" },
];
const INSTANCE = "inst_1";
const DAY = 86_400;

/** A database at migration 012 whose 011 function is kept as switchyard_post_leased_011, then at 013. */
async function database(): Promise<SQL> {
  const sql = new SQL({ url: await testDatabase(), max: 1 });
  await migratePostgres(sql, PG_MIGRATIONS.filter((m) => m.version <= 12));
  await sql`ALTER FUNCTION switchyard_post_leased(TEXT, JSON, BIGINT) RENAME TO switchyard_post_leased_011`;
  await migratePostgres(sql);
  return sql;
}

async function seed(sql: SQL, random: () => number): Promise<void> {
  for (const id of ACCOUNTS) {
    const balance = Math.floor(random() * 40_000);
    const leased = Math.floor(random() * balance * 0.8);
    const reserved = Math.floor(random() * (balance - leased) * 0.5);
    await sql`INSERT INTO accounts (id, name, balance, reserved, leased, created_at) VALUES (${id}, ${id}, ${balance}, ${reserved}, ${leased}, 0)`;
    // The instance's lease is part of what is leased (other instances hold the rest).
    const mine = Math.floor(leased * random());
    if (mine > 0) await sql`INSERT INTO leases (instance_id, kind, subject, amount) VALUES (${INSTANCE}, 'credit', ${id}, ${mine})`;
  }
  for (const k of KEYS) {
    const leased = Math.floor(random() * 5_000);
    await sql`INSERT INTO api_keys (id, account_id, prefix, hash, created_at, spend_limit, limit_reset, period_start, period_spent, leased)
              VALUES (${k.id}, ${k.account}, 'p', ${k.id}, 0, 1000000, ${k.reset}, ${10 * DAY}, ${Math.floor(random() * 3000)}, ${leased})`;
    if (leased > 0 && random() < 0.7) await sql`INSERT INTO leases (instance_id, kind, subject, amount) VALUES (${INSTANCE}, 'key', ${k.id}, ${Math.floor(leased * random())})`;
  }
}

/** What both databases must agree on after every batch. */
async function state(sql: SQL) {
  return {
    accounts: await sql`SELECT id, balance::text, reserved::text, leased::text FROM accounts ORDER BY id`,
    keys: await sql`SELECT id, spent::text, period_start::text, period_spent::text, leased::text FROM api_keys ORDER BY id`,
    leases: await sql`SELECT instance_id, kind, subject, amount::text FROM leases ORDER BY kind, subject`,
    entries: await sql`SELECT account_id, kind, amount::text, balance_after::text, request_id, endpoint, model, reason, input_tokens::text,
                              cached_tokens::text, cache_write_tokens::text, key_id, counted_at::text
                         FROM ledger_entries ORDER BY id`,
  };
}

test("013's set-based switchyard_post_leased answers and writes exactly what 011's per-charge one did", async () => {
  const runs = Number(process.env.SHIPPING_DIFF_RUNS ?? 6);
  let reduced = 0;
  let repeats = 0;
  for (let run = 0; run < runs; run++) {
    const seedValue = 1000 + run;
    const old = await database();
    const now = await database();
    try {
      for (const sql of [old, now]) await seed(sql, rng(seedValue));
      const random = rng(seedValue * 7 + 1);
      const shipped: string[] = [];
      let next = 0;
      for (let batch = 0; batch < 12; batch++) {
        const size = 1 + Math.floor(random() * 40);
        const items: Record<string, unknown>[] = [];
        for (let i = 0; i < size; i++) {
          // A repeat of a charge shipped in an earlier batch (its answer was lost), now and then.
          const repeat = shipped.length > 0 && random() < 0.1 ? shipped[Math.floor(random() * shipped.length)]! : null;
          if (repeat && items.some((x) => x.request_id === repeat)) continue;
          const key = random() < 0.75 ? KEYS[Math.floor(random() * KEYS.length)]! : null;
          const account = random() < 0.03 ? "acct_missing" : key ? key.account : ACCOUNTS[Math.floor(random() * ACCOUNTS.length)]!;
          const heldDay = 9 + Math.floor(random() * 4); // before, in and after the keys' stored period
          const held = heldDay * DAY + Math.floor(random() * DAY);
          items.push({
            request_id: repeat ?? `req_${seedValue}_${next++}`, account_id: account, key_id: key?.id ?? null,
            amount: Math.floor(random() * 2_500), held_at: held, day: heldDay * DAY, week: Math.floor(heldDay / 7) * 7 * DAY,
            month: Math.floor(heldDay / 30) * 30 * DAY, endpoint: "/v1/chat/completions", model: "m", service_tier: "default",
            note: random() < 0.2 ? "upstream over-reported" : null, input_tokens: 10, output_tokens: 5,
            cached_tokens: Math.floor(random() * 10), cache_write_tokens: 0, cache_saved: 0, reasoning_tokens: 0, characters: 0,
          });
        }
        const a = await old`SELECT request_id, outcome, charged::text, balance_after::text FROM switchyard_post_leased_011(${INSTANCE}, ${items}::json, 1000)`;
        const b = await now`SELECT request_id, outcome, charged::text, balance_after::text FROM switchyard_post_leased(${INSTANCE}, ${items}::json, 1000)`;
        const byId = (rows: any[]) => [...rows].sort((x, y) => (x.request_id < y.request_id ? -1 : 1));
        expect({ seed: seedValue, batch, answers: byId(b) }).toEqual({ seed: seedValue, batch, answers: byId(a) });
        expect(await state(now)).toEqual(await state(old));
        for (const r of a) {
          if (r.outcome === "reduced") reduced++;
          if (r.outcome === "repeat") repeats++;
          if (r.outcome === "posted" || r.outcome === "reduced") shipped.push(r.request_id);
        }
      }
    } finally {
      await old.close();
      await now.close();
    }
  }
  // The cases that differ from the plain one were met (else the seeds prove little).
  expect(reduced).toBeGreaterThan(0);
  expect(repeats).toBeGreaterThan(0);
});
