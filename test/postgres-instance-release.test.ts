/**
 * A release of an instance (a survivor's pass, or its own next run) and a hold that instance is
 * writing at that moment: the hold is either voided with the others or refused, never left
 * pending for a released instance. The reserve is held open inside its transaction while the
 * release runs; the release must wait for it (seen in pg_stat_activity: ordering, not timing).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { migratePostgres } from "../src/store/postgres/migrate";
import { testDatabase } from "./support/postgres";

let db: SQL;

beforeAll(async () => {
  db = new SQL({ url: await testDatabase(), max: 4 });
  await migratePostgres(db);
  await db`INSERT INTO instances (id, name, host, pid, timeout_ms) VALUES ('dying', 'box', 'h', 1, 60000), ('next', 'box', 'h', 2, 60000)`;
  await db`INSERT INTO accounts (id, name, balance, created_at) VALUES ('acct', 'a', 1000000, 0)`;
}, 60_000);
afterAll(async () => {
  await db?.close();
});

test("a hold written while its instance is released is voided with the others, not left pending", async () => {
  const writer = await db.reserve();
  try {
    await writer`BEGIN`;
    const [r] = await writer`SELECT * FROM switchyard_reserve('req_late', 'acct', 500, '/v1/chat/completions', 'm', 'dying', 0)`;
    expect(r.ok).toBe(true);

    // The instance's next run releases what the dying run left, while that reserve is uncommitted.
    let releaseDone = false;
    const release = db`SELECT * FROM switchyard_release_previous('next', 'box', 0)`.then((rows) => {
      releaseDone = true;
      return rows;
    });
    // Either the release waits on the writer's lock (fixed), or it has already finished (the race).
    for (;;) {
      const [w] = await db`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%switchyard_release_previous%'`;
      if (releaseDone || w.n > 0) break;
      await Bun.sleep(10);
    }
    await writer`COMMIT`;
    await release;
  } finally {
    writer.release();
  }
  const pending = await db`SELECT request_id FROM holds WHERE state = 'pending'`;
  expect(pending).toEqual([]);
  const [a] = await db`SELECT reserved::int AS reserved FROM accounts WHERE id = 'acct'`;
  expect(a.reserved).toBe(0);
});
