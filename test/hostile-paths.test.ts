/**
 * Hostile paths in a real server process, with its log read line by line (issue: a client
 * disconnect followed by a failed charge left the hold pending until restart and printed a raw
 * stack trace to stderr as an unhandled rejection, breaking the JSON log).
 *
 * While another process holds the database's write lock past the server's bounded wait, a client
 * leaves mid-stream and a plain request finishes: both charges fail. Their holds (in the server's
 * memory) are released at once, nothing is charged, no rejection went unhandled, and every line
 * the server wrote is JSON. Upstream failures mid-stream and clients that leave before any output
 * are run beside them.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { spawnServer, type ServerProcess } from "./support/server-process";
import { chat, contentChunks, readUntil } from "./support/gateway-client";
import { holdWriteLock } from "./support/disk";

const ADMIN = "hostile-paths-admin-token-0123456789";
/** Served by the second fake upstream, so a test can slow one model while the other streams. */
const SLOW_MODEL = "minimax-m2";
let fake: FakeUpstream;
let slow: FakeUpstream;
let dataDir: string;
let server: ServerProcess;

beforeAll(async () => {
  fake = startFakeUpstream();
  slow = startFakeUpstream();
  dataDir = mkdtempSync(join(tmpdir(), "switchyard-hostile-"));
  server = await spawnServer({
    SWITCHYARD_DATA_DIR: dataDir,
    SWITCHYARD_ADMIN_TOKEN: ADMIN,
    SWITCHYARD_ROUTES: JSON.stringify({
      upstreams: { quick: { base_url: fake.url }, slow: { base_url: slow.url } },
      models: { "glm-4.6": [{ upstream: "quick" }], [SLOW_MODEL]: [{ upstream: "slow" }] },
    }),
    SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
  });
}, 30_000);
afterAll(async () => {
  server.proc.kill("SIGTERM");
  await server.exited;
  fake.stop();
  slow.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(server.base + path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await res.json()) as any;
}

/** What the server holds for the account now (in its memory): the admin API's live figure. */
async function held(accountId: string): Promise<number> {
  return (await admin("GET", `/admin/accounts/${accountId}`)).reserved;
}

function inspect(accountId: string) {
  const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
  try {
    const acct = db.query("SELECT balance, reserved FROM accounts WHERE id = ?").get(accountId) as { balance: number; reserved: number };
    const charges = (db.query("SELECT COUNT(*) AS n FROM ledger_entries WHERE account_id = ? AND kind = 'charge'").get(accountId) as { n: number }).n;
    const pending = (db.query("SELECT COUNT(*) AS n FROM holds WHERE account_id = ? AND state = 'pending'").get(accountId) as { n: number }).n;
    return { ...acct, charges, pending };
  } finally {
    db.close();
  }
}

test("failed charges after a disconnect and a plain call: holds released by the running server, nothing charged, no unhandled rejection, a JSON log", async () => {
  const acct = await admin("POST", "/admin/accounts", { name: "hostile", credits: 5 });
  const key = (await admin("POST", `/admin/accounts/${acct.id}/keys`, {})).key as string;
  const start = inspect(acct.id);

  // A stream the client will leave, and a plain call the upstream answers late.
  fake.behave({ words: Array.from({ length: 200 }, (_, i) => ` w${i}`), chunkDelayMs: 20 });
  slow.behave({ words: ["late"], delayMs: 800 });
  const ac = new AbortController();
  const streamed = await chat(server.base, key, { stream: true }, ac.signal);
  await readUntil(streamed, (t) => contentChunks(t).length >= 3);
  const plain = chat(server.base, key, { model: SLOW_MODEL });
  for (let i = 0; i < 300 && slow.requests.length < 1; i++) await Bun.sleep(10);
  expect(await held(acct.id)).toBeGreaterThan(0);

  // Another process takes the write lock (as the CLI does while it writes), for longer than the server waits.
  const lock = holdWriteLock(join(dataDir, "switchyard.db"));
  ac.abort();
  const plainRes = await plain;
  expect(plainRes.status).toBe(503);
  // Its hold was in memory: released at once, so the client may be told it was not billed.
  expect(((await plainRes.json()) as any).error.message).toContain("not billed");
  // The departed stream's charge waits for the lock too: give it its bounded wait, then let go.
  await Bun.sleep(2_500);
  lock.release();

  // Nothing is held any more, and nothing was charged.
  for (let i = 0; i < 200 && (await held(acct.id)) > 0; i++) await Bun.sleep(25);
  expect(await held(acct.id)).toBe(0);
  expect(inspect(acct.id)).toEqual({ ...start, pending: 0 });

  // Beside them: an upstream failure mid-stream, and a client gone before any output.
  fake.behave({ words: Array.from({ length: 20 }, (_, i) => ` e${i}`), errorAfterChunks: 3 });
  expect(await (await chat(server.base, key, { stream: true })).text()).toContain("not billed");
  slow.behave({ words: ["x"], delayMs: 300 });
  const early = new AbortController();
  const gone = chat(server.base, key, { model: SLOW_MODEL, stream: true }, early.signal).catch(() => null);
  await Bun.sleep(100);
  early.abort();
  await gone;
  await Bun.sleep(400);
  expect(inspect(acct.id)).toEqual({ ...start, pending: 0 });
  expect(await held(acct.id)).toBe(0);

  const raw = server.logs.filter((l) => "raw" in l && String(l.raw).trim() !== "");
  expect(raw).toEqual([]);
  expect(server.logs.filter((l) => l.msg === "unhandled rejection")).toEqual([]);
  expect(server.logs.some((l) => l.msg === "the ledger cannot write; new requests are refused with 503 until it can")).toBe(true);
}, 40_000);
