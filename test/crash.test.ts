/**
 * Crash safety (docs/money.md): the real server runs as a child process; after a first wave of load
 * that completes, a second wave of slow streams is cut by SIGKILL mid-stream. On restart over the
 * same data directory: no hold is left open, every request that returned success is charged
 * exactly once, and no other request is charged.
 */
import { ledgerOnDisk } from "./support/ledger-state";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { spawnServer, type ServerProcess } from "./support/server-process";
import { chat, contentChunks, readUntil } from "./support/gateway-client";

const ADMIN = "crash-test-admin-token-0123456789";
const STREAM_WORDS = Array.from({ length: 60 }, (_, i) => ` w${i}`);

let fake: FakeUpstream;
let dataDir: string;
let server: ServerProcess | null = null;

const env = () => ({
  SWITCHYARD_DATA_DIR: dataDir,
  SWITCHYARD_ADMIN_TOKEN: ADMIN,
  SWITCHYARD_UPSTREAM_URL: fake.url,
  SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
  SWITCHYARD_RATE_LIMIT_RPM: "100000",
  SWITCHYARD_CONCURRENCY_LIMIT: "1000",
});

async function admin(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await res.json()) as any;
}

const inspect = (accountId: string) => ledgerOnDisk(dataDir, accountId);

beforeAll(() => {
  fake = startFakeUpstream();
  dataDir = mkdtempSync(join(tmpdir(), "switchyard-crash-"));
});
afterAll(async () => {
  if (server) {
    server.proc.kill("SIGTERM");
    await server.exited;
  }
  fake.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test("SIGKILL mid-stream, restart: holds released, successes charged once, nothing else charged", async () => {
  server = await spawnServer(env());
  const acct = await admin(server.base, "POST", "/admin/accounts", { name: "crash", credits: 10 });
  const key = (await admin(server.base, "POST", `/admin/accounts/${acct.id}/keys`, {})).key as string;
  const succeeded = new Set<string>();
  const attempted = new Set<string>();

  // Wave 1: quick plain and streamed requests that all finish.
  fake.behave({ words: ["a", "b", "c"], promptTokens: 7 });
  await Promise.all(
    Array.from({ length: 30 }, async (_, i) => {
      const stream = i % 3 === 0;
      const res = await chat(server!.base, key, { stream, max_tokens: 50 });
      const id = res.headers.get("x-request-id")!;
      attempted.add(id);
      const text = await res.text();
      if (res.status === 200 && (!stream || text.includes("data: [DONE]"))) succeeded.add(id);
    }),
  );
  expect(succeeded.size).toBe(30);

  // Wave 2: slow streams, each cut after it delivered a few chunks.
  fake.behave({ words: STREAM_WORDS, chunkDelayMs: 50, promptTokens: 7 });
  const inFlight = await Promise.all(
    Array.from({ length: 25 }, async () => {
      const res = await chat(server!.base, key, { stream: true, max_tokens: 500 });
      attempted.add(res.headers.get("x-request-id")!);
      const { reader, text } = await readUntil(res, (t) => contentChunks(t).length >= 2);
      expect(text).not.toContain("[DONE]");
      return reader;
    }),
  );
  server.proc.kill("SIGKILL");
  expect(await server.exited).not.toBe(0);
  for (const r of inFlight) await r.read().then(() => r.cancel()).catch(() => {});

  // The dead process held 25 requests in flight, in memory: nothing of them is on disk, and the
  // balance is whole but for the charges of the requests that completed.
  const dead = inspect(acct.id);
  expect(dead.pending).toBe(0);
  expect(dead.reserved).toBe(0);
  expect(new Set(dead.charges.map((c) => c.request_id))).toEqual(succeeded);

  // The restart finds nothing to release.
  server = await spawnServer(env());
  expect(server.logs.find((l) => l.msg === "released holds of requests that never finished")).toBeUndefined();
  const after = inspect(acct.id);
  expect(after.pending).toBe(0);
  expect(after.reserved).toBe(0);
  const charged = after.charges.map((c) => c.request_id);
  expect(charged.length).toBe(new Set(charged).size);
  expect(new Set(charged)).toEqual(succeeded);
  for (const id of charged) expect(attempted.has(id)).toBe(true);
  // Money adds up: balance = credits + entries, and the API agrees.
  expect(after.sum).toBe(after.balance);
  const view = await admin(server.base, "GET", `/admin/accounts/${acct.id}`);
  expect(view.reserved).toBe(0);

  // The restarted server serves and bills normally.
  fake.behave({ words: ["ok"], promptTokens: 7 });
  const res = await chat(server.base, key, { max_tokens: 10 });
  expect(res.status).toBe(200);
  const id = res.headers.get("x-request-id")!;
  expect(inspect(acct.id).charges.filter((c) => c.request_id === id).length).toBe(1);
}, 40_000);
