/**
 * Quiet streams: heartbeat comments keep a stream that says nothing for a while alive (tested
 * with a lowered interval over real HTTP, so the test stays short), and upstream pauses shorter
 * than the route's idle deadline are relayed, not cut.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Server } from "bun";
import { producerStream } from "../src/metering/producer-stream";
import { sseData } from "../src/protocols/sse";
import { startHarness, type Harness } from "./support/harness";
import { okStream, startScripted, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat, sseEvents, streamedText } from "./support/chat-client";

let server: Server<undefined>;
let cancelled = 0;

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    // Shorter than the quiet gap below: only heartbeats (and the per-request override) keep it open.
    idleTimeout: 1,
    fetch(req, srv) {
      srv.timeout(req, 0);
      const body = producerStream({
        heartbeatMs: 100,
        onCancel: () => cancelled++,
        produce: async (w) => {
          w.write(new TextEncoder().encode(sseData({ n: 1 })));
          await Bun.sleep(1_600);
          w.write(new TextEncoder().encode(sseData({ n: 2 })));
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
});
afterAll(() => server.stop(true));

test("a stream quiet for longer than the server's idle timeout carries heartbeat comments and completes", async () => {
  const res = await fetch(`http://127.0.0.1:${server.port}/`);
  const text = await res.text();
  expect(text.startsWith('data: {"n":1}\n\n')).toBe(true);
  expect(text.endsWith('data: {"n":2}\n\n')).toBe(true);
  const comments = text.split("\n").filter((l) => l.startsWith(":"));
  // 1.6 s of silence at a 100 ms heartbeat: about 15 comments; at least several must be there.
  expect(comments.length).toBeGreaterThanOrEqual(5);
});

test("a client that goes away cancels the producer at once", async () => {
  const client = new AbortController();
  const res = await fetch(`http://127.0.0.1:${server.port}/`, { signal: client.signal });
  const reader = res.body!.getReader();
  await reader.read();
  client.abort();
  const until = Date.now() + 1_000;
  while (cancelled === 0 && Date.now() < until) await Bun.sleep(10);
  expect(cancelled).toBe(1);
});

let up: ScriptedUpstream;
let h: Harness;

beforeAll(async () => {
  up = startScripted((b) => okStream(b, ["slow", " but", " fine"], 600));
  h = await startHarness({
    SWITCHYARD_ROUTES: JSON.stringify({ upstreams: { u: { base_url: up.url, timeouts: { idle_ms: 1_000 } } }, models: { "glm-4.6": [{ upstream: "u" }] } }),
  });
});
afterAll(async () => {
  await h.stop();
  up.stop();
});

test("upstream pauses shorter than idle_ms are relayed, not cut", async () => {
  const k = await h.account(10);
  const res = await postChat(h.base, k.key, { model: "glm-4.6", stream: true, messages: [{ role: "user", content: "hi" }] });
  const events = await sseEvents(res);
  expect(streamedText(events)).toBe("slow but fine");
  expect(events.at(-1)).toBe("[DONE]");
});
