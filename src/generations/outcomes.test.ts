import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "../store/database";
import { newRequestId } from "../http/request-context";
import { arrivalOfRequestId, RequestOutcomes, requestIdBefore, type RequestOutcome } from "./outcomes";

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
  requestId, accountId: "acct_a", endpoint: "/v1/chat/completions", model: "glm-4.6", httpStatus: 200,
  outcome: "sent", streamed: false, durationMs: 12.6, engineMs: 3.2, ...extra,
});
const rows = () => (db.query("SELECT COUNT(*) AS n FROM request_outcomes").get() as { n: number }).n;

describe("RequestOutcomes", () => {
  test("recorded outcomes are readable at once, and written by the next flush in one batch", () => {
    const o = new RequestOutcomes(open(), () => {}, { flushMs: 60_000, maxPending: 100, retentionMs: 86_400_000 });
    const id = newRequestId();
    o.record(outcome(id));
    expect(o.get(id)).toMatchObject({ requestId: id, durationMs: 13, engineMs: 3 });
    expect(rows()).toBe(0);
    o.flush();
    expect(rows()).toBe(1);
    expect(o.get(id)).toEqual(outcome(id, { durationMs: 13, engineMs: 3 }));
    o.close();
  });

  test("a flush leaves the connection's synchronous level as it was", () => {
    const o = new RequestOutcomes(open());
    const level = () => (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    const before = level();
    o.record(outcome(newRequestId()));
    o.flush();
    expect(level()).toBe(before);
    o.close();
  });

  test("close() writes what is pending; later records are ignored", () => {
    const o = new RequestOutcomes(open());
    o.record(outcome(newRequestId()));
    o.close();
    expect(rows()).toBe(1);
    o.record(outcome(newRequestId()));
    o.flush();
    expect(rows()).toBe(1);
  });

  test("a failed write keeps the rows for the next try, bounded by maxPending", () => {
    const errors: string[] = [];
    const o = new RequestOutcomes(open(), (m) => errors.push(m), { flushMs: 60_000, maxPending: 3, retentionMs: 86_400_000 });
    db.run("DROP TABLE request_outcomes");
    for (let i = 0; i < 5; i++) o.record(outcome(newRequestId(Date.now() + i)));
    o.flush();
    expect(errors[0]).toContain("request outcomes not written");
    db.run("CREATE TABLE request_outcomes (request_id TEXT PRIMARY KEY, account_id TEXT, endpoint TEXT, model TEXT, http_status INTEGER, outcome TEXT, streamed INTEGER, duration_ms INTEGER, engine_ms INTEGER)");
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
