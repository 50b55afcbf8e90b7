/**
 * One clock for a key's spend periods (issue: a daily limit was not a daily limit):
 *   (a) instances with clocks seconds apart around midnight must not reset each other's spend —
 *       a $0.02 daily limit took $0.0629 in one day when every request from the instance past
 *       midnight reset the key's spend and every request from the other reset it back;
 *   (b) changing limit_reset (never → daily → weekly → monthly → never) must keep what was spent
 *       in the current period — each change gave a $0.01 limit a fresh allowance ($0.041 in a day);
 *   (c) a key's usage for its period is counted the way its limit is — a hold taken before
 *       midnight and charged after it counted in yesterday's limit but in today's usage, so
 *       usage_daily showed more than a limit that was never exceeded.
 * On SQLite (one process; its clock is moved back and forth instead) and PostgreSQL (two
 * instances whose clocks are 4 s apart; both on the direct path and on leases).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ledger } from "../src/billing/ledger";
import { Log } from "../src/log";
import { DomainError } from "../src/errors";
import { ApiKeys, NO_CONTROLS, type KeyRecords } from "../src/accounts/api-keys";
import type { LedgerStore } from "../src/billing/ledger-store";
import { periodStarts, type LimitReset } from "../src/billing/key-periods";
import { spentThisPeriod } from "../src/accounts/key-controls";
import { openStore, type Store } from "../src/store/database";
import { SqliteLedgerStore } from "../src/store/sqlite/ledger-store";
import { SqliteKeyRecords } from "../src/store/sqlite/accounts";
import { PgKeyRecords } from "../src/store/postgres/accounts";
import { pgFixture, type PgFixture, type PgInstance } from "./support/postgres-store";
import { describeEachStore, type TestStore } from "./support/stores";

const UNIT = 1_000_000_000; // units per USD
/** A request: 1 unit per token; each holds 2,600,000 units ($0.0026) and is charged what it holds. */
const price = (u: { inputTokens?: number }) => u.inputTokens ?? 0;
const COST = 2_600_000;
const MIDNIGHT = Date.UTC(2026, 10, 28) + 86_400_000; // 2026-11-29 00:00 UTC

interface Instance {
  store: LedgerStore;
  /** Ships what the instance journaled (PostgreSQL on leases), so the database has it. */
  ship(): Promise<void>;
}

interface Rig {
  instances: Instance[];
  keys: ApiKeys;
  records: KeyRecords;
  openAccount(id: string, credits: number): Promise<void>;
  close(): Promise<void>;
}

async function rig(kind: TestStore, leases: boolean): Promise<Rig> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-key-periods-"));
    const db: Store = openStore(dir, { busyTimeoutMs: 0 });
    const store = new SqliteLedgerStore(db, { fsync: (_fd, cb) => setImmediate(() => cb(null)) });
    const records = new SqliteKeyRecords(db);
    return {
      // One process: "two instances" are the same store, its clock moved back and forth.
      instances: [{ store, ship: async () => {} }, { store, ship: async () => {} }],
      keys: new ApiKeys(records),
      records,
      openAccount: (id, credits) => store.createAccount({ id, name: id, createdAt: 0 }, credits, "test"),
      async close() {
        store.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const pg: PgFixture = await pgFixture();
  const a: PgInstance = leases ? await pg.instance({ leases: true }) : pg.a;
  const b: PgInstance = await pg.instance({ leases });
  const ship = (i: PgInstance) => async () => void (await i.ledger.journal?.drain(10_000));
  const records = new PgKeyRecords(pg.a.db);
  return {
    instances: [{ store: a.ledger, ship: ship(a) }, { store: b.ledger, ship: ship(b) }],
    keys: new ApiKeys(records),
    records,
    openAccount: async (id, credits) => {
      await pg.a.db.sql`INSERT INTO accounts (id, name, created_at) VALUES (${id}, ${id}, 0)`;
      await pg.a.ledger.adjust(id, credits, "test");
    },
    close: () => pg.close(),
  };
}

const variants: [TestStore, boolean][] = [["sqlite", false], ["postgres", false], ["postgres", true]];

for (const [kind, leases] of variants) {
  describeEachStore(`a key's spend periods${leases ? " (leases)" : ""}`, (store) => {
    if (store !== kind) return;
    let r: Rig;
    let n = 0;
    beforeAll(async () => {
      r = await rig(kind, leases);
    }, 60_000);
    afterAll(() => r.close());

    async function keyFor(limitUsd: number, reset: LimitReset | null) {
      const account = `acct_kp_${kind}_${leases}_${++n}`;
      await r.openAccount(account, 100 * UNIT);
      const k = await r.keys.create(account, "k", { ...NO_CONTROLS, spend_limit: limitUsd * UNIT, limit_reset: reset });
      return { account, keyId: k.id };
    }

    /** One request on a ledger whose clock reads `at`: hold, charge its whole hold, release. Its charge, or 0 when refused. */
    async function request(ledger: Ledger, account: string, keyId: string, reset: LimitReset | null): Promise<number> {
      let hold;
      try {
        hold = await ledger.reserve({
          requestId: `req_kp_${++n}`, accountId: account, endpoint: "/v1/chat/completions", model: "m", budget: { inputTokens: COST }, price,
          key: { id: keyId, limitReset: reset },
        });
      } catch (e) {
        if (e instanceof DomainError && e.code === "key_limit_exceeded") return 0;
        throw e;
      }
      try {
        return (await hold.settle({ inputTokens: COST, serviceTier: "default" })).charged;
      } finally {
        await hold.release();
      }
    }

    test("(a) two clocks 4 s apart around midnight: a $0.02 daily limit takes at most $0.02 across both", async () => {
      const { account, keyId } = await keyFor(0.02, "daily");
      const ahead = new Ledger(r.instances[0]!.store, new Log("silent"), { now: () => MIDNIGHT + 2_000 });
      const behind = new Ledger(r.instances[1]!.store, new Log("silent"), { now: () => MIDNIGHT - 2_000 });
      let total = 0;
      let served = 0;
      for (let i = 0; i < 24; i++) {
        const charged = await request(i % 2 === 0 ? ahead : behind, account, keyId, "daily");
        total += charged;
        if (charged > 0) served++;
        // Requests a moment apart, each charge in the database before the next request (leases
        // ship in batches: without this the order the two journals ship in would decide which
        // period their charges count in).
        await r.instances[i % 2]!.ship();
      }
      for (const inst of r.instances) await inst.ship();
      expect(total).toBeLessThanOrEqual(0.02 * UNIT);
      expect(served).toBe(Math.floor((0.02 * UNIT) / COST));
      // The key's period is the newer day, and it holds everything spent around midnight.
      const key = (await r.records.get(keyId))!;
      expect(key.period_start).toBe(MIDNIGHT / 1000);
      expect(key.period_spent).toBe(total);
      ahead.close();
      behind.close();
    });

    test("(b) changing limit_reset keeps what was spent in the current period: no fresh allowance at any change", async () => {
      const now = Date.now();
      const { account, keyId } = await keyFor(0.01, null);
      const ledger = new Ledger(r.instances[0]!.store, new Log("silent"), { now: () => now });
      const spend = async (reset: LimitReset | null) => {
        let total = 0;
        for (let i = 0; i < 6; i++) total += await request(ledger, account, keyId, reset);
        await r.instances[0]!.ship();
        return total;
      };
      let total = await spend(null);
      for (const reset of ["daily", "weekly", "monthly", null] as const) {
        await r.keys.update(keyId, { limit_reset: reset });
        total += await spend(reset);
      }
      expect(total).toBeLessThanOrEqual(0.01 * UNIT);
      expect(total).toBe(Math.floor((0.01 * UNIT) / COST) * COST);
      const key = (await r.records.get(keyId))!;
      expect(key.period_spent).toBe(total);
      ledger.close();
    });

    test("(c) a hold taken before midnight and charged after it: the day's usage is what the limit counts, never above it", async () => {
      const now = Date.now();
      const today = periodStarts(now).day * 1000;
      const { account, keyId } = await keyFor(0.02, "daily");
      // Held yesterday, one second before midnight; charged today (the store writes it now).
      const yesterday = new Ledger(r.instances[0]!.store, new Log("silent"), { now: () => today - 1_000 });
      expect(await request(yesterday, account, keyId, "daily")).toBe(COST);
      // Today's requests, up to the limit.
      const ledger = new Ledger(r.instances[0]!.store, new Log("silent"), { now: () => now });
      let todays = 0;
      for (let i = 0; i < 10; i++) todays += await request(ledger, account, keyId, "daily");
      await r.instances[0]!.ship();
      const allowed = Math.floor((0.02 * UNIT) / COST) * COST;
      if (leases) {
        // A charge journaled before midnight and shipped after today's first charges counts in
        // today's period (a period never moves back): today then allows one request less, never more.
        expect(todays).toBeGreaterThanOrEqual(allowed - COST);
        expect(todays).toBeLessThanOrEqual(allowed);
      } else expect(todays).toBe(allowed);
      const usage = await r.records.usageSince(keyId, periodStarts(now));
      const key = (await r.records.get(keyId))!;
      // What GET /v1/key reports as usage_daily for a daily key, and the sum by day, both agree with the limit.
      expect(usage.day).toBe(spentThisPeriod(key, now));
      expect(usage.day).toBeLessThanOrEqual(0.02 * UNIT);
      if (!leases) expect(usage.day).toBe(todays);
      yesterday.close();
      ledger.close();
    });
  });
}
