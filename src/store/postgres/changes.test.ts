/**
 * Changes reach every instance by LISTEN/NOTIFY: a key revoked or an account's disabled flag or
 * limits changed — by any connection, plain SQL included — notifies every listener within
 * milliseconds; balance changes (every charge) do not.
 */
import { expect, test } from "bun:test";
import { listenForChanges, type Change } from "./changes";
import { usePgFixture } from "../../../test/support/postgres-store";

const f = usePgFixture();

test("revocations and account changes notify every instance; charges do not", async () => {
  const b = await f.instance();
  const seenA: Change[] = [];
  const seenB: Change[] = [];
  const feedA = await listenForChanges(f.a.db, (c) => seenA.push(c));
  const feedB = await listenForChanges(b.db, (c) => seenB.push(c));
  try {
    const acct = await f.account(1000);
    await f.a.db.sql`INSERT INTO api_keys (id, account_id, prefix, hash, created_at) VALUES ('key_chg', ${acct}, 'sy-x', 'hash_chg', 0)`;
    const settle = () => Bun.sleep(150);
    await settle();
    seenA.length = seenB.length = 0;

    const t0 = performance.now();
    await f.a.db.sql`UPDATE api_keys SET revoked_at = 1 WHERE id = 'key_chg'`;
    // Polled for up to 10 s; how long it took is printed, not asserted on (a loaded machine).
    while (seenB.length === 0 && performance.now() - t0 < 10_000) await Bun.sleep(2);
    console.log(`change on A heard on B after ${Math.round(performance.now() - t0)} ms`);
    expect(seenB).toEqual([{ table: "api_keys", id: "key_chg" }]);

    await b.db.sql`UPDATE accounts SET disabled = 1 WHERE id = ${acct}`;
    await b.db.sql`UPDATE accounts SET rate_limit_rpm = 5 WHERE id = ${acct}`;
    await b.db.sql`UPDATE accounts SET rate_limit_rpm = 5 WHERE id = ${acct}`; // no change: no notification
    await b.ledger.adjust(acct, 500, "credits need none: holds read the balance");
    await settle();
    expect(seenA).toEqual([
      { table: "api_keys", id: "key_chg" },
      { table: "accounts", id: acct },
      { table: "accounts", id: acct },
    ]);
  } finally {
    await feedA.close();
    await feedB.close();
  }
});

test("after the database restarts, the feed subscribes again by itself and reports that anything may have changed", async () => {
  const { startPostgres } = await import("../../../test/support/postgres");
  const { PgDatabase } = await import("./database");
  const { migratePostgres } = await import("./migrate");
  const pg = await startPostgres();
  const db = new PgDatabase({ url: await pg.createDatabase("changes_restart"), pool: 2 });
  const seen: Change[] = [];
  let feed: { close(): Promise<void> } | null = null;
  try {
    await migratePostgres(db.sql);
    feed = await listenForChanges(db, (c) => seen.push(c));
    await Bun.sleep(50);
    seen.length = 0; // the first subscription reports itself too
    await pg.stop();
    await pg.start();
    // The reconnection itself is reported as "everything changed" (notifications meanwhile were lost).
    for (let i = 0; i < 200 && !seen.some((c) => c.table === "*"); i++) await Bun.sleep(25);
    expect(seen.some((c) => c.table === "*")).toBe(true);
    seen.length = 0;
    await db.sql`INSERT INTO accounts (id, name, created_at) VALUES ('acct_r', 'r', 0)`;
    await db.sql`UPDATE accounts SET disabled = 1 WHERE id = 'acct_r'`;
    for (let i = 0; i < 200 && !seen.some((c) => c.table === "accounts"); i++) await Bun.sleep(10);
    expect(seen.filter((c) => c.table !== "*")).toEqual([{ table: "accounts", id: "acct_r" }]);
  } finally {
    await feed?.close().catch(() => {});
    await db.close();
    await pg.destroy();
  }
}, 60_000);
