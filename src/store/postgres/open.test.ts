/**
 * Start-up on PostgreSQL: migrate, register, release what the previous run of the same instance
 * (same data directory) left behind at once, listen for changes; an unreachable database is a
 * configuration error naming the variable, never the password.
 */
import { afterAll, beforeAll, expect, test, setDefaultTimeout } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, ConfigError } from "../../config";
import { openPostgres } from "./open";
import { testDatabase } from "../../../test/support/postgres";

setDefaultTimeout(30_000);

let url: string;
const dataDir = mkdtempSync(join(tmpdir(), "switchyard-pg-open-"));
beforeAll(async () => {
  url = await testDatabase();
}, 60_000);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const hooks = { onChange: () => {} };

test("a restarted instance releases its previous run's holds and slots at once", async () => {
  const config = loadConfig({ SWITCHYARD_DATABASE_URL: url, SWITCHYARD_DATA_DIR: dataDir });
  const first = await openPostgres(config, hooks);
  await first.db.sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_open', 'o', 0)`;
  await first.ledger.adjust("acct_open", 1000, "test");
  expect((await first.limiter.admit("acct_open", { rateLimitRpm: 100, concurrencyLimit: 10 })).ok).toBe(true);
  expect(await first.ledger.grant({ requestId: "open_1", accountId: "acct_open", amount: 400, endpoint: "e", model: "m" })).toEqual({ ok: true, direct: true });
  // Killed: no clean release.
  first.registry!.halt();
  await first.db.close();

  const second = await openPostgres(config, hooks);
  try {
    expect(second.registry!.name).toBe(first.registry!.name);
    // Its slot lease (one request in flight, and room for more) and its hold.
    expect(second.releasedAtStart.holdsVoided).toBe(1);
    expect(second.releasedAtStart.slotsReleased).toBeGreaterThanOrEqual(1);
    const [row] = (await second.db.sql`SELECT reserved::int AS reserved, leased::int AS leased FROM accounts WHERE id = 'acct_open'`) as [{ reserved: number; leased: number }];
    expect(row).toEqual({ reserved: 0, leased: 0 });
    const [limit] = (await second.db.sql`SELECT in_flight FROM limit_state WHERE account_id = 'acct_open'`) as [{ in_flight: number }];
    expect(limit.in_flight).toBe(0);
  } finally {
    await second.close();
  }
  // A clean close released the run: nothing left for a survivor.
  const third = await openPostgres(config, hooks);
  try {
    const [inst] = (await third.db.sql`
      SELECT count(*)::int AS n FROM instances WHERE name = ${first.registry!.name} AND released_at IS NULL`) as [{ n: number }];
    expect(inst.n).toBe(1); // only the run just opened
    expect(third.releasedAtStart).toEqual({ holdsVoided: 0, slotsReleased: 0 });
  } finally {
    await third.close();
  }
});

test("an unreachable database is a configuration error naming SWITCHYARD_DATABASE_URL, without the password", async () => {
  const config = loadConfig({ SWITCHYARD_DATABASE_URL: "postgres://u:hunter2secret@127.0.0.1:1/x", SWITCHYARD_DATA_DIR: dataDir });
  const e = await openPostgres(config, hooks).catch((err) => err);
  expect(e).toBeInstanceOf(ConfigError);
  expect(e.message).toContain("SWITCHYARD_DATABASE_URL");
  expect(e.message).not.toContain("hunter2secret");
});
