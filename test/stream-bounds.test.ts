/**
 * Nothing in a stream grows without bound, and no stream runs forever (docs/operate.md "Limits, usage and
 * metrics"): a raw upstream that never ends its line, sends data lines without the blank line that
 * ends an event, keeps a stream alive with comments only, or keeps sending data past the stream's
 * maximum duration. Outcomes asserted, never durations: the error event or the `length` ending,
 * what was charged, and that no hold is left.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { enc, serveLoopback, sleep } from "./support/loopback-server";

type Mode = "long-line" | "no-blank-line" | "comments-only" | "endless-data";
let mode: Mode = "long-line";
/** Upstream streams still being written (each ends when the gateway lets go of it). */
let open = 0;
let maxSent = 0;

const chunk = (content: string) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

/** A stream of `next()` pieces until the gateway cancels it (or `limit` bytes, so a broken gateway fails the test instead of hanging it). */
function endless(signal: AbortSignal, first: string, next: () => string, pauseMs: number, limit = 64 * 1024 * 1024): Response {
  let sent = 0;
  let stopped = false;
  open++;
  const done = () => {
    if (stopped) return;
    stopped = true;
    open--;
    maxSent = Math.max(maxSent, sent);
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(enc.encode(first));
      sent += first.length;
    },
    async pull(c) {
      if (pauseMs) await sleep(pauseMs);
      if (stopped) return;
      if (sent > limit) {
        done();
        c.close();
        return;
      }
      const piece = next();
      sent += piece.length;
      c.enqueue(enc.encode(piece));
    },
    cancel: done,
  });
  signal.addEventListener("abort", done, { once: true });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

const upstream = serveLoopback({
  idleTimeout: 0,
  async fetch(req) {
    await req.json();
    const x16k = "x".repeat(16 * 1024);
    switch (mode) {
      case "long-line":
        // One event, then an event whose line never ends.
        return endless(req.signal, chunk("Hello") + 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"', () => x16k, 0);
      case "no-blank-line":
        // Data lines forever, never the blank line that ends their event.
        return endless(req.signal, chunk("Hello"), () => `data: ${x16k}\n`, 0);
      case "comments-only":
        // One event, then only comments: they must not keep the stream (and its hold) alive.
        return endless(req.signal, chunk("Hello"), () => ": ping\n\n", 20);
      case "endless-data":
        // Data events forever, each well within the idle timeout.
        return endless(req.signal, chunk("Hello"), () => chunk(" word"), 20);
    }
  },
});

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    SWITCHYARD_ROUTES: JSON.stringify({ upstreams: { u: { base_url: upstream.url, timeouts: { idle_ms: 400 } } }, models: { "glm-4.6": [{ upstream: "u" }] } }),
    SWITCHYARD_SSE_MAX_LINE_CHARS: String(256 * 1024),
    SWITCHYARD_SSE_MAX_EVENT_CHARS: String(256 * 1024),
    SWITCHYARD_STREAM_MAX_SECONDS: "1",
  });
});
afterAll(async () => {
  await h.stop();
  upstream.server.stop(true);
});

const routes = {
  chat: ["/v1/chat/completions", { model: "glm-4.6", max_tokens: 30_000, messages: [{ role: "user", content: "hi" }], stream: true }],
  messages: ["/v1/messages", { model: "glm-4.6", max_tokens: 30_000, messages: [{ role: "user", content: "hi" }], stream: true }],
  responses: ["/v1/responses", { model: "glm-4.6", max_output_tokens: 30_000, input: "hi", stream: true }],
} as const;

/** Each protocol's mid-stream error event (chat: code upstream_error). */
const errorMarker = { chat: '"code":"upstream_error"', messages: "event: error", responses: "event: response.failed" };

async function stream(path: string, body: unknown, key: string): Promise<string> {
  const res = await fetch(h.base + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return res.text();
}

/** The upstream's stream was let go of (cancelled by the gateway), not written to its limit. */
async function upstreamReleased() {
  for (let i = 0; i < 500 && open > 0; i++) await sleep(10);
  expect(open).toBe(0);
  expect(maxSent).toBeLessThan(64 * 1024 * 1024);
}

describe("a bound broken mid-stream: an upstream_error event, not billed, hold released", () => {
  for (const m of ["long-line", "no-blank-line", "comments-only"] as const) {
    for (const [name, [path, body]] of Object.entries(routes)) {
      test(`${m}, ${name}`, async () => {
        mode = m;
        maxSent = 0;
        const a = await h.account(1);
        const text = await stream(path, body, a.key);
        // The first event was relayed; then the protocol's error event.
        expect(text).toContain("Hello");
        expect(text).toContain(errorMarker[name as keyof typeof routes]);
        expect(text).toContain("not billed");
        expect(text).not.toContain("xxxx");
        expect(h.balanceUnits(a.id)).toEqual({ balance: 1_000_000_000, reserved: 0 });
        expect(h.ledgerSum(a.id)).toBe(1_000_000_000);
        await upstreamReleased();
      });
    }
  }
});

describe("a stream that runs past SWITCHYARD_STREAM_MAX_SECONDS ends as length, billed as delivered", () => {
  test("chat: finish_reason length, a final usage chunk, a charge for what was delivered", async () => {
    mode = "endless-data";
    const a = await h.account(1);
    const text = await stream(routes.chat[0], { ...routes.chat[1], stream_options: { include_usage: true } }, a.key);
    const events = text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.some((c) => c.choices?.[0]?.finish_reason === "length")).toBe(true);
    const delivered = chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("");
    expect(delivered.startsWith("Hello word")).toBe(true);
    const usage = chunks.at(-1).usage;
    expect(usage.completion_tokens).toBeGreaterThan(0);
    const after = h.balanceUnits(a.id);
    expect(after.reserved).toBe(0);
    expect(after.balance).toBeLessThan(1_000_000_000);
    expect(h.ledgerSum(a.id)).toBe(after.balance);
    await upstreamReleased();
  });
  test("messages: stop_reason max_tokens", async () => {
    mode = "endless-data";
    const a = await h.account(1);
    const text = await stream(routes.messages[0], routes.messages[1], a.key);
    expect(text).toContain('"stop_reason":"max_tokens"');
    expect(text).toContain("message_stop");
    expect(h.balanceUnits(a.id).reserved).toBe(0);
    expect(h.balanceUnits(a.id).balance).toBeLessThan(1_000_000_000);
    await upstreamReleased();
  });
  test("responses: status incomplete, reason max_output_tokens", async () => {
    mode = "endless-data";
    const a = await h.account(1);
    const text = await stream(routes.responses[0], routes.responses[1], a.key);
    expect(text).toContain("response.incomplete");
    expect(text).toContain('"reason":"max_output_tokens"');
    expect(h.balanceUnits(a.id).reserved).toBe(0);
    expect(h.balanceUnits(a.id).balance).toBeLessThan(1_000_000_000);
    await upstreamReleased();
  });
});
