import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { newRequestId } from "../http/request-context";
import { SqliteOutcomeRecords } from "../store/sqlite/outcomes";
import { arrivalOfRequestId, RequestOutcomes, requestIdBefore, type OutcomeRecords, type RequestOutcome } from "./outcomes";

let dir: string;
let db: Store;
const open = () => {
  dir = mkdtempSync(join(tmpdir(), "switchyard-outcomes-"));
  db = openStore(dir);
  return db;
};
afterEach(() => {
  db?.close();
  rmSync(dir, { recursive: true, force: true });
});

const outcome = (requestId: string, extra: Partial<RequestOutcome> = {}): RequestOutcome => ({
  requestId, accountId: "acct_a", keyId: "key_a", endpoint: "/v1/chat/completions", model: "glm-4.6", httpStatus: 200,
  outcome: "sent", streamed: false, durationMs: 12.6, engineMs: 3.2, ...extra,
});
const rows = () => (db.query("SELECT COUNT(*) AS n FROM request_outcomes").get() as { n: number }).n;

describe("RequestOutcomes", () => {
  test("recorded outcomes are readable at once, and written by the next flush in one batch", async () => {
    const o = new RequestOutcomes(new SqliteOutcomeRecords(open()), () => {}, { flushMs: 60_000, maxPending: 100, retentionMs: 86_400_000 });
    const id = newRequestId();
    o.record(outcome(id));
    expect(await o.get(id)).toMatchObject({ requestId: id, durationMs: 13, engineMs: 3 });
    expect(rows()).toBe(0);
    o.flush();
    expect(rows()).toBe(1);
    expect(await o.get(id)).toEqual(outcome(id, { durationMs: 13, engineMs: 3 }));
    o.close();
  });

  test("a flush leaves the connection's synchronous level as it was", () => {
    const o = new RequestOutcomes(new SqliteOutcomeRecords(open()));
    const level = () => (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    const before = level();
    o.record(outcome(newRequestId()));
    o.flush();
    expect(level()).toBe(before);
    o.close();
  });

  test("close() writes what is pending; later records are ignored", () => {
    const o = new RequestOutcomes(new SqliteOutcomeRecords(open()));
    o.record(outcome(newRequestId()));
    o.close();
    expect(rows()).toBe(1);
    o.record(outcome(newRequestId()));
    o.flush();
    expect(rows()).toBe(1);
  });

  test("a failed write keeps the rows for the next try, bounded by maxPending", () => {
    const errors: string[] = [];
    const o = new RequestOutcomes(new SqliteOutcomeRecords(open()), (m) => errors.push(m), { flushMs: 60_000, maxPending: 3, retentionMs: 86_400_000 });
    db.run("DROP TABLE request_outcomes");
    for (let i = 0; i < 5; i++) o.record(outcome(newRequestId(Date.now() + i)));
    o.flush();
    expect(errors[0]).toContain("request outcomes not written");
    db.run("CREATE TABLE request_outcomes (request_id TEXT PRIMARY KEY, account_id TEXT, key_id TEXT, endpoint TEXT, model TEXT, http_status INTEGER, outcome TEXT, streamed INTEGER, duration_ms INTEGER, engine_ms INTEGER)");
    o.flush();
    expect(rows()).toBe(3);
    o.close();
  });

  test("request ids sort by arrival: the retention cut-off is a range on the key", () => {
    const t = Date.UTC(2026, 10, 23, 12);
    const early = newRequestId(t - 1);
    const late = newRequestId(t);
    expect(early < requestIdBefore(t)).toBe(true);
    expect(late < requestIdBefore(t)).toBe(false);
    expect(arrivalOfRequestId(late)).toBe(t);
    expect(arrivalOfRequestId("chatcmpl-x")).toBeNull();
  });
});

describe("the timer's flush", () => {
  test("writes a busy second's rows in slices, one per turn of the event loop; rows recorded meanwhile wait for the next tick", async () => {
    const writes: number[] = [];
    const turns: number[] = [];
    // Counts turns of the event loop.
    let turn = 0;
    let counting = true;
    const bump = () => {
      turn++;
      if (counting) setImmediate(bump);
    };
    bump();
    const records: OutcomeRecords = {
      write(rows) {
        writes.push(rows.length);
        turns.push(turn);
        return true;
      },
      async get() {
        return null;
      },
      sweep() {},
    };
    const o = new RequestOutcomes(records, () => {}, { flushMs: 40, maxPending: 10_000, retentionMs: 86_400_000, sliceRows: 500 });
    const t = Date.now();
    for (let i = 0; i < 1_200; i++) o.record(outcome(newRequestId(t + i)));
    while (writes.length === 0) await Bun.sleep(1);
    // Recorded after the tick began: not part of its slices.
    for (let i = 0; i < 10; i++) o.record(outcome(newRequestId(t + 2_000 + i)));
    while (writes.length < 3) await Bun.sleep(1);
    expect(writes.slice(0, 3)).toEqual([500, 500, 200]);
    expect(new Set(turns.slice(0, 3)).size).toBe(3);
    while (writes.length < 4) await Bun.sleep(5);
    expect(writes[3]).toBe(10);
    counting = false;
    o.close();
  });
});
