import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { migrate, openStore, type Store } from "./database";
import { MIGRATIONS } from "./migrations/index";
import { ResponseStore } from "./responses";
import { SqliteResponseRecords, StoredResponseWriter } from "./sqlite/responses";

let dir: string;
let db: Store;
let store: ResponseStore;
let writer: StoredResponseWriter;

const msg = (role: string, text: string) => ({ id: `msg_${text}`, type: "message", role, content: [{ type: role === "user" ? "input_text" : "output_text", text }] });
const turn = (id: string, accountId: string, prev: string | null, said: string, answered: string) => ({
  id, accountId, previousResponseId: prev, inputItems: [msg("user", said)], response: { id, object: "response", output: [msg("assistant", answered)] }, createdAt: 1,
});

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "switchyard-responses-"));
  db = openStore(dir);
  for (const a of ["acct_a", "acct_b"]) db.query("INSERT INTO accounts (id, name, created_at) VALUES (?, ?, 0)").run(a, a);
  store = new ResponseStore(new SqliteResponseRecords(db), { retentionSeconds: 30 * 86_400, now: () => 2_000 });
  writer = new StoredResponseWriter(db);
  writer.write(turn("resp_1", "acct_a", null, "q1", "a1"));
  writer.write(turn("resp_2", "acct_a", "resp_1", "q2", "a2"));
  writer.write(turn("resp_3", "acct_a", "resp_2", "q3", "a3"));
  writer.write(turn("resp_b", "acct_b", null, "qb", "ab"));
});
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const texts = (items: Record<string, unknown>[] | null) => items?.map((i) => (i.content as { text: string }[])[0]!.text) ?? null;

test.each([
  ["resp_1", "acct_a", ["q1", "a1"]],
  ["resp_3", "acct_a", ["q1", "a1", "q2", "a2", "q3", "a3"]],
  ["resp_3", "acct_b", null],
  ["resp_b", "acct_a", null],
  ["resp_missing", "acct_a", null],
])("conversation(%p) for %p", async (id, account, expected) => {
  expect(texts(await store.conversation(id, account))).toEqual(expected);
});

test("get and delete only see the owner's rows", async () => {
  expect(await store.get("resp_b", "acct_a")).toBeNull();
  expect((await store.get("resp_b", "acct_b"))?.inputItems).toEqual([msg("user", "qb")]);
  expect(await store.delete("resp_b", "acct_a")).toBe(false);
  expect(await store.get("resp_b", "acct_b")).not.toBeNull();
  expect(await store.delete("resp_b", "acct_b")).toBe(true);
  expect(await store.delete("resp_b", "acct_b")).toBe(false);
});

test("a deleted ancestor ends the conversation after it", async () => {
  writer.write(turn("resp_x1", "acct_a", null, "x1", "y1"));
  writer.write(turn("resp_x2", "acct_a", "resp_x1", "x2", "y2"));
  writer.write(turn("resp_x3", "acct_a", "resp_x2", "x3", "y3"));
  await store.delete("resp_x2", "acct_a");
  expect(texts(await store.conversation("resp_x3", "acct_a"))).toEqual(["x3", "y3"]);
});

test("expiry: a turn past the retention period is gone for get, conversation and items; the sweep deletes its rows", async () => {
  let nowMs = 10_000_000_000;
  const day = 86_400;
  const aged = new ResponseStore(new SqliteResponseRecords(db), { retentionSeconds: 30 * day, now: () => nowMs });
  const at = (createdAt: number, t: ReturnType<typeof turn>) => ({ ...t, createdAt });
  const t0 = nowMs / 1000;
  writer.write(at(t0 - 31 * day, turn("resp_e1", "acct_b", null, "e1", "f1")));
  writer.write(at(t0 - 29 * day, turn("resp_e2", "acct_b", "resp_e1", "e2", "f2")));
  expect(await aged.get("resp_e1", "acct_b")).toBeNull();
  expect(texts(await aged.conversation("resp_e1", "acct_b"))).toBeNull();
  // The live turn's conversation starts after its expired ancestor.
  expect(texts(await aged.conversation("resp_e2", "acct_b"))).toEqual(["e2", "f2"]);
  expect([...(await aged.items(["msg_e1", "msg_e2"], "acct_b")).keys()]).toEqual(["msg_e2"]);
  // (The other turns of this file, created at 1970 + 1 s, go too.)
  const count = (sql: string) => (db.query(sql).get() as { n: number }).n;
  const before = count("SELECT COUNT(*) AS n FROM responses");
  expect(await aged.sweep()).toBe(before - 1);
  expect(count("SELECT COUNT(*) AS n FROM responses")).toBe(1);
  expect(count("SELECT COUNT(*) AS n FROM response_items WHERE response_id = 'resp_e1'")).toBe(0);
  expect(await aged.sweep()).toBe(0);
  nowMs += 2 * day * 1000;
  expect(await aged.get("resp_e2", "acct_b")).toBeNull();
  expect(await aged.sweep()).toBe(1);
});

test("migration 6 records the size of turns stored before it", () => {
  const old = mkdtempSync(join(tmpdir(), "switchyard-responses-v5-"));
  try {
    const raw = new Database(join(old, "switchyard.db"), { create: true, strict: true });
    for (const m of MIGRATIONS.filter((m) => m.version <= 5)) raw.run(m.sql);
    raw.run("PRAGMA user_version = 5");
    raw.run("INSERT INTO accounts (id, name, created_at) VALUES ('acct_old', 'old', 0)");
    raw.run(`INSERT INTO responses (id, account_id, previous_response_id, input_items, response, created_at) VALUES ('resp_old', 'acct_old', NULL, '[{"t":"é"}]', '{"id":"resp_old"}', 1)`);
    migrate(raw);
    expect(raw.query("SELECT size FROM responses WHERE id = 'resp_old'").get()).toEqual({ size: '[{"t":"é"}]'.length + 1 + '{"id":"resp_old"}'.length });
    raw.close();
  } finally {
    rmSync(old, { recursive: true, force: true });
  }
});
