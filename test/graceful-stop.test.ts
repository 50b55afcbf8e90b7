/**
 * Graceful stop, with the real server as a child process: on SIGTERM readiness and new requests
 * turn 503 at once while the listener stays open; a stream that started before finishes whole and
 * is billed once; with a tiny grace period, streams still open get their protocol's error event and
 * are not billed; the process exits 0 after one log line per step. The fake upstream holds each
 * stream before its last chunk until the test lets it go (no sleeps decide anything here).
 */
import { ledgerOnDisk } from "./support/ledger-state";
import { afterAll, beforeAll, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { spawnServer, type ServerProcess } from "./support/server-process";
import { chat, contentChunks, readUntil } from "./support/gateway-client";

const ADMIN = "graceful-stop-admin-token-0123456789";
const CREDITS_UNITS = 10 * 1_000_000_000;

let fake: FakeUpstream;
let dataDir: string;
let server: ServerProcess | null = null;
/** Lets the held streams finish. */
let release: () => void = () => {};

beforeAll(() => {
  fake = startFakeUpstream();
});
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), "switchyard-stop-"));
  const gate = new Promise<void>((r) => (release = r));
  fake.behave({ words: ["one", " two", " three"], promptTokens: 7, beforeFinish: () => gate });
});
afterAll(async () => {
  release();
  if (server && server.proc.exitCode === null) server.proc.kill("SIGKILL");
  fake.stop();
});

const start = (grace: number) =>
  spawnServer({
    SWITCHYARD_DATA_DIR: dataDir,
    SWITCHYARD_ADMIN_TOKEN: ADMIN,
    SWITCHYARD_UPSTREAM_URL: fake.url,
    SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
    SWITCHYARD_SHUTDOWN_GRACE_SECONDS: String(grace),
  });

async function admin(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await res.json()) as any;
}

async function account(base: string) {
  const acct = await admin(base, "POST", "/admin/accounts", { name: "stop", credits: 10 });
  return { id: acct.id as string, key: (await admin(base, "POST", `/admin/accounts/${acct.id}/keys`, {})).key as string };
}

const inspect = (accountId: string) => ledgerOnDisk(dataDir, accountId);

/** Waits for a log line (the server logs each step of its stop). */
async function logLine(s: ServerProcess, msg: string) {
  for (;;) {
    const line = s.logs.find((l) => l.msg === msg);
    if (line) return line;
    if (s.proc.exitCode !== null) throw new Error(`server exited without logging "${msg}": ${JSON.stringify(s.logs)}`);
    await Bun.sleep(10);
  }
}

const responsesStream = (base: string, key: string) =>
  fetch(base + "/v1/responses", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "glm-4.6", input: "hi", stream: true, max_output_tokens: 50 }),
  });

test("SIGTERM mid-stream: readiness and new requests are 503 at once; the stream finishes whole, billed once; exit 0", async () => {
  server = await start(30);
  const s = server;
  const acct = await account(s.base);
  const ready = await fetch(s.base + "/readyz");
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ status: "ready", store: { engine: "sqlite", ok: true } });

  const res = await chat(s.base, acct.key, { stream: true, max_tokens: 50 });
  const requestId = res.headers.get("x-request-id")!;
  const { reader, text: before } = await readUntil(res, (t) => contentChunks(t).length >= 3);
  s.proc.kill("SIGTERM");
  expect(await logLine(s, "draining")).toMatchObject({ requests: 1, streams: 1 });

  // Stopping: the listener answers, but only probes are served.
  const refused = await chat(s.base, acct.key, { max_tokens: 10 });
  expect(refused.status).toBe(503);
  expect((await refused.json()).error).toMatchObject({ code: "service_unavailable", message: expect.stringContaining("stopping") });
  const notReady = await fetch(s.base + "/readyz");
  expect(notReady.status).toBe(503);
  expect((await notReady.json()).status).toBe("stopping");
  expect((await fetch(s.base + "/healthz")).status).toBe(200);

  release();
  const { text: after } = await readUntil(reader, () => false);
  const whole = before + after;
  expect(contentChunks(whole).join("")).toBe("one two three");
  expect(whole).toContain('"finish_reason":"stop"');
  expect(whole.trimEnd().endsWith("data: [DONE]")).toBe(true);

  expect(await s.exited).toBe(0);
  const msgs = s.logs.map((l) => l.msg);
  expect(msgs).toContain("signal received; stopping");
  expect(msgs).toContain("stopped");
  expect(msgs).not.toContain("grace period expired; cutting what is still open");
  expect(s.logs.find((l) => l.msg === "signal received; stopping")).toMatchObject({ signal: "SIGTERM", grace_seconds: 30 });

  const ledger = inspect(acct.id);
  expect(ledger.charges.map((c) => c.request_id)).toEqual([requestId]);
  expect(ledger.pending).toBe(0);
  expect(ledger.reserved).toBe(0);
  expect(ledger.sum).toBe(ledger.balance);
  expect(ledger.charges[0]!.amount).toBeLessThan(0); // charges are negative entries
  expect(ledger.balance).toBe(CREDITS_UNITS + ledger.charges[0]!.amount);
}, 60_000);

const messagesStream = (base: string, key: string) =>
  fetch(base + "/v1/messages", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "glm-4.6", max_tokens: 50, messages: [{ role: "user", content: "hi" }], stream: true }),
  });

test("grace period over: open chat, Messages and Responses streams end with their error event, unbilled; exit 0", async () => {
  server = await start(1);
  const s = server;
  const acct = await account(s.base);
  const chatRes = await chat(s.base, acct.key, { stream: true, max_tokens: 50 });
  const chatRead = await readUntil(chatRes, (t) => contentChunks(t).length >= 3);
  const respRes = await responsesStream(s.base, acct.key);
  const respRead = await readUntil(respRes, (t) => t.includes("response.output_text.delta"));
  const msgRes = await messagesStream(s.base, acct.key);
  expect(msgRes.status).toBe(200);
  const msgRead = await readUntil(msgRes, (t) => t.includes("content_block_delta"));

  s.proc.kill("SIGTERM");
  const chatEnd = (await readUntil(chatRead.reader, () => false)).text;
  const respEnd = (await readUntil(respRead.reader, () => false)).text;
  const msgEnd = (await readUntil(msgRead.reader, () => false)).text;

  // Chat: an error data event, no [DONE]; Responses: response.failed, last.
  expect(chatEnd).toContain('"code":"service_unavailable"');
  expect(chatEnd).toContain("not billed");
  expect(chatEnd).not.toContain("[DONE]");
  const events = respEnd.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  expect(events.at(-1)).toMatchObject({ type: "response.failed", response: { status: "failed" } });
  expect(events.at(-1).response.error.message).toContain("not billed");
  // Messages: event: error, last, and no message_stop.
  expect(msgEnd.trim().split("\n\n").at(-1)).toStartWith("event: error");
  expect(msgEnd).toContain("not billed");
  expect(msgEnd).not.toContain("message_stop");

  expect(await s.exited).toBe(0);
  expect(s.logs.find((l) => l.msg === "draining")).toMatchObject({ requests: 3, streams: 3 });
  expect(s.logs.find((l) => l.msg === "grace period expired; cutting what is still open")).toMatchObject({ cut_streams: 3 });
  expect(s.logs.map((l) => l.msg)).toContain("stopped");

  const ledger = inspect(acct.id);
  expect(ledger.charges).toEqual([]);
  expect(ledger.pending).toBe(0);
  expect(ledger.reserved).toBe(0);
  expect(ledger.balance).toBe(CREDITS_UNITS);
  expect(ledger.sum).toBe(ledger.balance);
  release();
}, 60_000);
