import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type Store } from "./database";
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
  store = new ResponseStore(new SqliteResponseRecords(db));
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
