/**
 * Full disks, locked databases and failed fsyncs fail cleanly (issue: holds that leaked, internal
 * 500s, streams that claimed "not billed", an account saved without its credits, a charged turn
 * that was not stored, an event loop frozen by a lock). Holds live in memory (nothing is written
 * before the upstream is called), so a store that cannot write is found by a charge:
 *   - a charge that cannot be written is not made, its hold is released at once (in memory), and
 *     the client is told it was not billed (503, generic message, Retry-After);
 *   - after that failure, new requests are refused with 503 service_unavailable before any
 *     upstream is called, for the probe interval; the next charge that lands clears it;
 *   - account creation with credits and a Responses turn with its charge are single transactions;
 *   - a write lock held by another process never blocks the event loop, and is waited out briefly.
 * A failed fsync is final: test/store-fsync.test.ts.
 * Disks fill for real: SQLite's max_page_count on the server's own connection (support/disk.ts).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Harness } from "./support/harness";
import { startHarness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat, contentChunks, post, readUntil } from "./support/gateway-client";
import { ledgerState, settled } from "./support/ledger-state";
import { fillDisk, holdWriteLock, type DiskFull } from "./support/disk";

let fake: FakeUpstream;
let h: Harness;
let acct: { id: string; key: string };
let disk: DiskFull | null = null;

const WORDS = Array.from({ length: 12 }, (_, i) => ` w${i}`);

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  acct = await h.account(10);
});
afterAll(async () => {
  disk?.restore();
  await h.stop();
  fake.stop();
});
beforeEach(async () => {
  disk?.restore();
  disk = null;
  fake.behave({ words: WORDS });
  fake.requests.length = 0;
  // Any earlier failure is probed away before the next test.
  await Bun.sleep(550);
});

const db = () => h.db;
const holdState = async (requestId: string) => (await h.probe.hold(requestId))?.state;

function expectGeneric503(status: number, headers: Headers, body: any) {
  expect(status).toBe(503);
  expect(headers.get("retry-after")).not.toBeNull();
  const text = JSON.stringify(body);
  expect(body.error?.code ?? body.error?.type).toMatch(/service_unavailable|overloaded_error/);
  for (const internal of ["SQLITE", "disk", "full", "pending hold", "settle", "database"]) expect(text).not.toContain(internal);
}

describe("a full disk: the charge that finds it is not billed, and then work is refused with 503 before any upstream is called", () => {
  const requests: [string, string, Record<string, unknown>][] = [
    ["chat", "/v1/chat/completions", { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] }],
    ["chat stream", "/v1/chat/completions", { model: "glm-4.6", stream: true, messages: [{ role: "user", content: "hi" }] }],
    ["messages", "/v1/messages", { model: "glm-4.6", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }],
    ["responses", "/v1/responses", { model: "glm-4.6", input: "hi" }],
    ["responses stream", "/v1/responses", { model: "glm-4.6", input: "hi", stream: true }],
  ];
  test.each(requests)("%s", async (_name, path, body) => {
    const before = ledgerState(h, acct.id);
    disk = fillDisk(db());
    // The first request meets the full disk at its charge: not billed, nothing held.
    const first = await post(h, path, acct.key, body);
    const text = await first.text();
    expect(text).toContain("not billed");
    expect(fake.requests).toHaveLength(1);
    expect(ledgerState(h, acct.id)).toEqual(before);
    // The next one is refused before any upstream is called.
    const res = await post(h, path, acct.key, body);
    expectGeneric503(res.status, res.headers, await res.json());
    expect(fake.requests).toHaveLength(1);
    disk.restore();
    expect(ledgerState(h, acct.id)).toEqual(before);
  });
});

describe("a charge that cannot be written", () => {
  test("stream on a full disk: the hold is released at once and the stream ends told 'not billed'; nothing is held", async () => {
    const before = ledgerState(h, acct.id);
    fake.behave({ words: WORDS, beforeFinish: () => void (disk = fillDisk(db())) });
    const res = await chat(h, acct.key, { stream: true });
    const id = res.headers.get("x-request-id")!;
    const text = await res.text();
    expect(contentChunks(text)).toHaveLength(WORDS.length);
    expect(text).toContain('"code":"service_unavailable"');
    expect(text).toContain("could not record this request's charge, so it was not billed");
    expect(text).not.toContain("[DONE]");
    expect(ledgerState(h, acct.id)).toEqual(before);
    expect(await holdState(id)).toBe("voided");
  });

  test("stream whose charge entry cannot be written: told 'not billed', and nothing is held", async () => {
    const before = ledgerState(h, acct.id);
    fake.behave({ words: WORDS, beforeFinish: () => void (disk = fillDisk(db(), ["ledger_entries"])) });
    const res = await chat(h, acct.key, { stream: true });
    const text = await res.text();
    expect(text).toContain("could not record this request's charge, so it was not billed");
    expect(await holdState(res.headers.get("x-request-id")!)).toBe("voided");
    expect(ledgerState(h, acct.id)).toEqual(before);
  });

  test("plain chat: a 503 that says it was not billed, nothing charged or held", async () => {
    const before = ledgerState(h, acct.id);
    fake.behave({ words: WORDS, delayMs: 50 });
    const pending = chat(h, acct.key);
    // Fill the disk while the upstream works: the charge will not be written.
    for (let i = 0; i < 100 && fake.requests.length === 0; i++) await Bun.sleep(5);
    disk = fillDisk(db());
    const res = await pending;
    const body = (await res.json()) as any;
    expect(res.status).toBe(503);
    expect(body.error.message).toBe("The service could not record this request's charge, so it was not billed. Please retry shortly.");
    disk.restore();
    expect(ledgerState(h, acct.id)).toEqual(before);
  });

  test("a client that leaves mid-stream while the disk is full: not billed, nothing held", async () => {
    const before = ledgerState(h, acct.id);
    fake.behave({ words: Array.from({ length: 40 }, (_, i) => ` x${i}`), chunkDelayMs: 30 });
    const ac = new AbortController();
    const res = await chat(h, acct.key, { stream: true }, ac.signal);
    const id = res.headers.get("x-request-id")!;
    await readUntil(res, (t) => contentChunks(t).length >= 3);
    disk = fillDisk(db());
    ac.abort();
    // The departure is charged (input plus the output delivered) only once that output is counted,
    // which is asynchronous and may take seconds on a loaded machine. The disk stays full until the
    // charge was tried and failed: restoring it after a fixed wait would let a late charge land on
    // a disk with space again. Waited for by state, never by time.
    for (let i = 0; i < 3_000 && (await holdState(id)) === "pending"; i++) await Bun.sleep(10);
    expect(await holdState(id)).toBe("voided");
    expect(h.server.services.ledger.storeUnavailable).toBe(true);
    disk.restore();
    expect(ledgerState(h, acct.id)).toEqual(before);
  });
});

describe("single transactions", () => {
  test("POST /admin/accounts with credits on a disk that cannot take the credit entry: 503, no account saved; the retry creates exactly one", async () => {
    const name = `disk-full-${Date.now()}`;
    const count = () => (db().query("SELECT COUNT(*) AS n FROM accounts WHERE name = ?").get(name) as { n: number }).n;
    disk = fillDisk(db(), ["ledger_entries"]);
    const r = await h.admin("POST", "/admin/accounts", { name, credits: 1 });
    expect(r.status).toBe(503);
    expect(JSON.stringify(r.body)).not.toMatch(/SQLITE|disk|full/);
    expect(count()).toBe(0);
    disk.restore();
    await Bun.sleep(550);
    const again = await h.admin("POST", "/admin/accounts", { name, credits: 1 });
    expect(again.status).toBe(201);
    expect(again.body.balance).toBe(1);
    expect(count()).toBe(1);
  });

  test("/v1/responses whose turn cannot be stored: not charged (plain 503, told not billed), nothing stored", async () => {
    const before = ledgerState(h, acct.id);
    disk = fillDisk(db(), ["responses"]);
    const res = await post(h, "/v1/responses", acct.key, { model: "glm-4.6", input: "hi" });
    const body = (await res.json()) as any;
    expect(res.status).toBe(503);
    expect(body.error.message).toContain("not billed");
    expect(fake.requests).toHaveLength(1);
    expect(ledgerState(h, acct.id)).toEqual(before);
    expect(db().query("SELECT COUNT(*) AS n FROM responses WHERE id = ?").get("resp_" + res.headers.get("x-request-id")!.slice(4))).toEqual({ n: 0 });
  });

  test("/v1/responses streamed whose turn cannot be stored: ends with response.failed, not charged", async () => {
    const before = ledgerState(h, acct.id);
    disk = fillDisk(db(), ["responses"]);
    const res = await post(h, "/v1/responses", acct.key, { model: "glm-4.6", input: "hi", stream: true });
    const text = await res.text();
    expect(text).toContain("event: response.failed");
    expect(text).not.toContain("event: response.completed");
    // The terminal event ends a Responses stream; no [DONE] follows it.
    expect(text).not.toContain("[DONE]");
    expect(text.trim().split("\n\n").at(-1)).toStartWith("event: response.failed");
    expect(ledgerState(h, acct.id)).toEqual(before);
  });

  test("/v1/responses with store:false never writes a turn, so it is served and charged as usual", async () => {
    disk = fillDisk(db(), ["responses"]);
    const res = await post(h, "/v1/responses", acct.key, { model: "glm-4.6", input: "hi", store: false });
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-request-cost"))).toBeGreaterThan(0);
  });

  test("a stored turn and its charge land together", async () => {
    const res = await post(h, "/v1/responses", acct.key, { model: "glm-4.6", input: "hi" });
    const body = (await res.json()) as any;
    const id = res.headers.get("x-request-id")!;
    const charge = db().query("SELECT created_at FROM ledger_entries WHERE request_id = ? AND kind = 'charge'").get(id);
    expect(charge).not.toBeNull();
    expect(db().query("SELECT COUNT(*) AS n FROM responses WHERE id = ?").get(body.id)).toEqual({ n: 1 });
  });
});

describe("another process holding the write lock", () => {
  const dbPath = () => join(h.dataDir, "switchyard.db");

  test("never blocks the event loop: /healthz answers while the lock is held, and a short lock only delays the request", async () => {
    const before = ledgerState(h, acct.id);
    const lock = holdWriteLock(dbPath());
    const pending = chat(h, acct.key);
    await Bun.sleep(100);
    const health = await fetch(h.base + "/healthz");
    expect(health.status).toBe(200);
    // Released from this same process: possible only because the server's thread is not stuck in a lock wait.
    lock.release();
    const res = await pending;
    expect(res.status).toBe(200);
    const after = await settled(h, acct.id);
    expect(before.balance - after.balance).toBeGreaterThan(0);
    expect(after.charges).toBe(before.charges + 1);
  });

  test("a lock held past the bounded wait: the charge waits it out, then 503 not billed, nothing held", async () => {
    const before = ledgerState(h, acct.id);
    const lock = holdWriteLock(dbPath());
    try {
      const res = await chat(h, acct.key);
      const body = await res.json();
      expectGeneric503(res.status, res.headers, body);
      expect(body.error.message).toContain("not billed");
    } finally {
      lock.release();
    }
    expect(ledgerState(h, acct.id)).toEqual(before);
  });
});

describe("admin writes under a lock or a full disk", () => {
  test("PATCH /admin/accounts and key creation answer 503 (never a frozen loop, never storage text), and work once the lock is gone", async () => {
    const lock = holdWriteLock(join(h.dataDir, "switchyard.db"));
    try {
      const patch = await h.admin("PATCH", `/admin/accounts/${acct.id}`, { rate_limit_rpm: 1000 });
      expect(patch.status).toBe(503);
      expect(patch.body.error.code).toBe("service_unavailable");
      const key = await h.admin("POST", `/admin/accounts/${acct.id}/keys`, {});
      expect(key.status).toBe(503);
    } finally {
      lock.release();
    }
    expect((await h.admin("PATCH", `/admin/accounts/${acct.id}`, { rate_limit_rpm: null })).status).toBe(200);
  });
});

describe("errors are domain values", () => {
  test("an unexpected failure becomes a generic 500 carrying the request id, never internal text", async () => {
    db().run("CREATE TEMP TRIGGER secret_failure BEFORE INSERT ON ledger_entries WHEN NEW.kind = 'charge' BEGIN SELECT RAISE(ABORT, 'secret internal detail at /srv/ledger.db'); END");
    try {
      const before = ledgerState(h, acct.id);
      const res = await chat(h, acct.key);
      const body = (await res.json()) as any;
      expect(res.status).toBe(500);
      expect(body.error.message).toBe(`The server had an error while processing your request (request id ${res.headers.get("x-request-id")}).`);
      expect(JSON.stringify(body)).not.toContain("secret");
      expect(ledgerState(h, acct.id)).toEqual(before);
    } finally {
      db().run("DROP TRIGGER temp.secret_failure");
    }
  });
});
