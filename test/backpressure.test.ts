/**
 * Backpressure. Before, 40 clients that never read a 14 MB stream drove the server's RSS from
 * 289 MB to 1,795 MB: the upstream was read to the end regardless, and a disconnect was billed for
 * what had been buffered. Now a stream reads its upstream only as fast as its client takes bytes,
 * a client that stops reading is cut off after the route's idle timeout, and it pays for the text
 * its connection took.
 *
 * The server runs as a child process, so its RSS is read from /proc; the upstream generates its
 * streams only as they are read, so it shows how far each one was read.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer, type ServerProcess } from "./support/server-process";
import { startPullUpstream, type PullUpstream } from "./support/pull-upstream";
import { countTextTokens, SHORT_JOB_CHARS } from "../src/tokens/tokens";

const ADMIN = "backpressure-admin-token-0123456789";
const MB = 1024 * 1024;
/** Served by an upstream whose route has a short idle timeout (the stall test). */
const STALL_MODEL = "qwen3-next-80b-a3b";
const STALL_IDLE_MS = 1_500;
/** Served by an upstream of 1 MB streams (the warm-up). */
const WARM_MODEL = "kimi-k2-instruct";
/** Served by the upstream of long-word streams. */
const LONG_WORD_MODEL = "minimax-m2";

let big: PullUpstream;
let small: PullUpstream;
/** 2 MB streams of one long word (no spaces: the hardest text to count in parts). */
let longWords: PullUpstream;
let endless: PullUpstream;
let dataDir: string;
let server: ServerProcess;

beforeAll(async () => {
  big = startPullUpstream(14 * MB);
  small = startPullUpstream(1 * MB);
  endless = startPullUpstream(1024 * MB);
  longWords = startPullUpstream(2 * MB, "supercalifragilistic".repeat(50));
  dataDir = mkdtempSync(join(tmpdir(), "switchyard-backpressure-"));
  server = await spawnServer({
    SWITCHYARD_DATA_DIR: dataDir,
    SWITCHYARD_ADMIN_TOKEN: ADMIN,
    SWITCHYARD_UPSTREAM_URL: big.url,
    SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
    SWITCHYARD_CONCURRENCY_LIMIT: "100",
    SWITCHYARD_ROUTES: JSON.stringify({
      upstreams: { endless: { base_url: endless.url, timeouts: { idle_ms: STALL_IDLE_MS } }, small: { base_url: small.url }, long: { base_url: longWords.url } },
      models: { [STALL_MODEL]: [{ upstream: "endless" }], [WARM_MODEL]: [{ upstream: "small" }], [LONG_WORD_MODEL]: [{ upstream: "long" }] },
    }),
  }, 60_000);
}, 90_000);

afterAll(async () => {
  server?.proc.kill("SIGTERM");
  await server?.exited;
  big?.stop();
  small?.stop();
  endless?.stop();
  longWords?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function account() {
  const call = async (method: string, path: string, body?: unknown) =>
    (await (await fetch(server.base + path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) })).json()) as any;
  const a = await call("POST", "/admin/accounts", { name: "reader", credits: 1000 });
  return { id: a.id as string, key: (await call("POST", `/admin/accounts/${a.id}/keys`, {})).key as string };
}

const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.proc.pid}/status`, "utf8"))![1]) / 1024;

/**
 * A streamed chat request over a raw socket that stops reading once the first bytes arrived
 * (the kernel's buffers then fill and the server's socket stops taking bytes).
 */
interface RawClient {
  socket: Socket;
  received: Buffer[];
  /** Resolves when the connection is closed (by either side). */
  closed: Promise<void>;
}
function nonReadingClient(key: string, model = "glm-4.6"): Promise<RawClient> {
  const url = new URL(server.base);
  // The output cap (max_tokens × n, here about 34 MB of these streams' text) must lie beyond what
  // the buffers between upstream and client hold, so that only backpressure stops the relay.
  const body = JSON.stringify({ model, stream: true, max_tokens: 32_768, n: 128, messages: [{ role: "user", content: "Write forever." }] });
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const received: Buffer[] = [];
    const closed = new Promise<void>((r) => socket.on("close", () => r()));
    socket.on("error", () => {});
    socket.once("connect", () => {
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    socket.on("data", (d: Buffer) => {
      if (received.length === 0) {
        socket.pause();
        resolve({ socket, received, closed });
      }
      received.push(d);
    });
    setTimeout(() => reject(new Error("no response within 20 s")), 20_000);
  });
}

/** The body of a raw HTTP/1.1 chunked response (headers included), as far as it arrived. */
function bodyOf(raw: Buffer): string {
  let rest = raw.subarray(raw.indexOf("\r\n\r\n") + 4);
  const body: Buffer[] = [];
  for (;;) {
    const eol = rest.indexOf("\r\n");
    if (eol < 0) break;
    const size = parseInt(rest.subarray(0, eol).toString(), 16);
    if (!(size > 0)) break;
    body.push(rest.subarray(eol + 2, eol + 2 + size));
    if (rest.length < eol + 2 + size + 2) break;
    rest = rest.subarray(eol + 2 + size + 2);
  }
  return Buffer.concat(body).toString();
}

/** The content of the complete SSE chat chunks in a body. */
function contentOf(body: string): string {
  let text = "";
  for (const event of body.split("\n\n").slice(0, -1)) {
    if (!event.startsWith("data: {")) continue;
    const c = JSON.parse(event.slice(6)).choices?.[0]?.delta?.content;
    if (typeof c === "string") text += c;
  }
  return text;
}

/**
 * The server's RSS once it has settled: the garbage of relaying megabytes is collected and its
 * memory given back over several seconds after the streams stall (the peak is much higher), so
 * it is sampled every 250 ms for at least `minMs`, until twelve samples in a row (3 s) lie
 * within 4 MB. The highest sample is reported as the peak.
 */
async function settledRss(minMs: number, maxMs = 60_000): Promise<{ settled: number; peak: number }> {
  const started = Date.now();
  const samples: number[] = [rssMb()];
  while (Date.now() - started < maxMs) {
    await Bun.sleep(250);
    samples.push(rssMb());
    const last = samples.slice(-12);
    if (Date.now() - started >= minMs && last.length === 12 && Math.max(...last) - Math.min(...last) < 4) break;
  }
  return { settled: samples[samples.length - 1]!, peak: Math.max(...samples) };
}

async function untilStill(read: () => number, stillMs = 1_000, maxMs = 20_000): Promise<number> {
  const deadline = Date.now() + maxMs;
  let last = read();
  let since = Date.now();
  while (Date.now() < deadline) {
    await Bun.sleep(100);
    const now = read();
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= stillMs) break;
  }
  return last;
}

/** An account's charges (newest first) and pending holds, read from the database file. */
function ledger(accountId: string) {
  const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
  try {
    const rows = db.query("SELECT output_tokens, amount FROM ledger_entries WHERE kind = 'charge' AND account_id = ? ORDER BY id DESC").all(accountId) as { output_tokens: number }[];
    const pending = (db.query("SELECT COUNT(*) AS n FROM holds WHERE state = 'pending' AND account_id = ?").get(accountId) as { n: number }).n;
    return { rows, pending };
  } finally {
    db.close();
  }
}

test("a client that stops reading stalls its upstream, is cut off after the idle timeout, and pays for what its connection took", async () => {
  const acct = await account();
  const client = await nonReadingClient(acct.key, STALL_MODEL);
  const requestId = /x-request-id: (\S+)/i.exec(Buffer.concat(client.received).toString())![1];
  const stream = endless.produced.length - 1;

  // The route's idle timeout later, the server ends the request and bills it.
  let state = ledger(acct.id);
  for (let i = 0; i < 500 && (state.pending > 0 || state.rows.length === 0); i++) {
    await Bun.sleep(20);
    state = ledger(acct.id);
  }
  expect(state.pending).toBe(0);
  expect(state.rows.length).toBe(1);
  const cut = server.logs.find((l) => l.msg === "stream cut off: the client stopped reading" && l.request_id === requestId) as { bytes_sent: number; idle_ms: number } | undefined;
  expect(cut?.idle_ms).toBe(STALL_IDLE_MS);
  // The upstream was read only as far as the buffers between it and the client hold (its stream
  // is endless), and not at all once the request ended.
  const stalledAt = endless.produced[stream]!;
  expect(stalledAt).toBeLessThan(64 * MB);
  await Bun.sleep(300);
  expect(endless.produced[stream]!).toBe(stalledAt);

  // Billed: the input plus exactly the content in the bytes the server's socket took. Every
  // content frame is alike, so those bytes hold a whole number of them.
  client.socket.resume();
  await client.closed;
  const body = bodyOf(Buffer.concat(client.received));
  const frame = body.slice(0, body.indexOf("\n\n") + 2);
  expect(frame).toContain(endless.piece);
  const framesSent = cut!.bytes_sent / Buffer.byteLength(frame);
  expect(Number.isInteger(framesSent)).toBe(true);
  const billed = state.rows[0]!.output_tokens;
  expect(billed).toBe(countTextTokens(endless.piece.repeat(framesSent)));
  // The client then read what reached it (the connection's reset may drop the rest) and no end.
  const received = countTextTokens(contentOf(body));
  expect(received).toBeLessThanOrEqual(billed);
  expect(received).toBeGreaterThan(0);
  expect(body).not.toContain("[DONE]");
  console.log(`backpressure: stalled stream read ${(stalledAt / MB).toFixed(1)} MB of its upstream; cut off after ${STALL_IDLE_MS} ms with ${(cut!.bytes_sent / MB).toFixed(1)} MB sent; billed ${billed} output tokens = the content of what was sent (the client read ${received} of them before the reset)`);
}, 60_000);

/**
 * The bound docs/money.md promises ("Slow clients"). A stalled stream holds its relay's queue
 * (32 KiB), the unsent rest of one upstream read, a window of text for billing, and 64 KiB in its
 * upstream connection, whose socket is then paused (src/upstream/http1/exchange.ts); the rest waits in the kernel's socket buffers,
 * which RSS does not count. Measured +40 to +53 MB settled (on Bun's fetch, which keeps ~1.6 MB of
 * every paused body, it was +98 to +114 MB; before backpressure, +1,506 MB).
 */
const RSS_GROWTH_LIMIT_MB = 100;

test("40 clients that stop reading 14 MB streams raise the server's RSS by less than 100 MB, not by their streams", async () => {
  const acct = await account();
  // Warm-up: streams read to the end, and both token-counting lanes started.
  const readAll = async () => {
    const res = await fetch(server.base + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: WARM_MODEL, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect((await res.text()).endsWith("data: [DONE]\n\n")).toBe(true);
  };
  await Promise.all(Array.from({ length: 2 }, readAll));
  // One text for each lane: the long lane takes texts longer than SHORT_JOB_CHARS.
  for (const text of ["short", "long ".repeat(Math.ceil(SHORT_JOB_CHARS / 5) + 1)]) {
    const res = await fetch(server.base + "/v1/messages/count_tokens", {
      method: "POST",
      headers: { "x-api-key": acct.key, "content-type": "application/json" },
      body: JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: text }] }),
    });
    expect(res.status).toBe(200);
  }
  const before = (await settledRss(2_000)).settled;
  const producedBefore = big.produced.length;

  const clients = await Promise.all(Array.from({ length: 40 }, () => nonReadingClient(acct.key)));
  // Every stream has stalled once the upstream has been idle for a while; then the server's
  // garbage from relaying them is collected (RSS peaks while it is not) and RSS settles.
  await untilStill(() => big.produced.reduce((a, b) => a + b, 0), 2_000, 60_000);
  const { settled: after, peak } = await settledRss(15_000);
  const produced = big.produced.slice(producedBefore);
  console.log(
    `backpressure: 40 non-reading clients of 14 MB streams: server RSS ${before.toFixed(0)} → ${after.toFixed(0)} MB ` +
      `(+${(after - before).toFixed(0)} MB settled, +${(peak - before).toFixed(0)} MB at most while relaying); upstream read per stream ${(Math.min(...produced) / MB).toFixed(1)}–${(Math.max(...produced) / MB).toFixed(1)} MB`,
  );
  expect(produced.length).toBe(40);
  expect(after - before).toBeLessThan(RSS_GROWTH_LIMIT_MB);

  for (const c of clients) c.socket.destroy();
  await Promise.all(clients.map((c) => c.closed));
}, 180_000);

/**
 * 40 clients that read whole 2 MB streams of long words, with max_tokens 32768 × n 128 so that
 * the output cap never ends them (every stream must arrive whole): what the server keeps once
 * they ended is bounded (no stream's text, tally or count stays behind). The peak is printed.
 */
test("40 clients reading 2 MB streams of long words, not ended by the cap, leave the server's RSS within 60 MB", async () => {
  const acct = await account();
  const body = JSON.stringify({ model: LONG_WORD_MODEL, stream: true, max_tokens: 32_768, n: 128, messages: [{ role: "user", content: "Write forever." }] });
  const read = async () => {
    const res = await fetch(server.base + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" }, body });
    return res.text();
  };
  await read();
  const before = (await settledRss(2_000)).settled;
  let peak = before;
  let reading = true;
  const sampler = (async () => {
    while (reading) {
      peak = Math.max(peak, rssMb());
      await Bun.sleep(50);
    }
  })();
  const texts = await Promise.all(Array.from({ length: 40 }, read));
  reading = false;
  await sampler;
  const { settled: after } = await settledRss(5_000);
  // Every stream arrived whole: not cut by the cap ("length"), ended by the upstream ("stop").
  for (const t of texts) {
    expect(t.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(t).toContain('"finish_reason":"stop"');
    expect(t).not.toContain('"finish_reason":"length"');
    expect(t.length).toBeGreaterThan(2 * MB);
  }
  console.log(
    `backpressure: 40 reading clients of 2 MB long-word streams: server RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MB ` +
      `(+${((peak - before) / 40).toFixed(2)} MB per stream at peak), settled ${after.toFixed(0)} MB (+${(after - before).toFixed(0)} MB)`,
  );
  expect(after - before).toBeLessThan(60);
}, 180_000);
