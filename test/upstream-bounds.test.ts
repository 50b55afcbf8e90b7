/**
 * What an upstream may not do to the gateway: a non-streamed reply larger than
 * SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES is read only up to the limit (its connection closed
 * there) and ends in a 502, unbilled, the hold released; and an upstream key holding a control
 * byte never reaches the wire, and the client is not blamed for it (docs/upstream-client.md,
 * "Behaviour operators see").
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { startHarness, type Harness } from "./support/harness";
import { chatCompletion, jsonReply, rawUpstream, type RawPeer, type RawUpstream } from "./support/raw-upstream";
import { ConfiguredRouteRegistry } from "../src/upstream/registry";

const LIMIT = 64 * 1024;
/** What the oversized reply says it holds; the upstream writes until the gateway hangs up. */
const DECLARED = 64 * 1024 * 1024;

const started: { stop(): unknown }[] = [];
afterAll(async () => {
  for (const s of started.splice(0).reverse()) await s.stop();
});

async function chat(h: Harness, key: string, prompt = "hi") {
  const res = await fetch(h.base + "/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "glm-4.6", max_tokens: 20, messages: [{ role: "user", content: prompt }] }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** Writes `total` bytes of filler after `head`, as fast as the socket takes them, until `closed()`. */
function flood(sock: Socket<RawPeer>, head: string, total: number, sent: { bytes: number }, closed: () => boolean) {
  const piece = Buffer.alloc(64 * 1024, 0x61);
  sock.write(head + '{"choices":[{"message":{"content":"');
  const pump = () => {
    while (!closed() && sent.bytes < total) {
      const next = piece.subarray(0, Math.min(piece.byteLength, total - sent.bytes));
      const n = sock.write(next);
      if (n < 0) return;
      sent.bytes += n;
      if (n < next.byteLength) return void setTimeout(pump, 1);
    }
  };
  pump();
}

describe("a non-streamed reply past SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES", () => {
  test.each([
    ["a content-length reply", (n: number) => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${n}\r\n\r\n`],
    ["a chunked reply", () => "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"],
  ])("%s: 502 upstream_error, nothing charged, hold released, connection closed at the limit; the gateway still serves", async (_name, headOf) => {
    const sent = { bytes: 0 };
    let huge = true;
    const upstream: RawUpstream = rawUpstream((sock, _request, peer) => {
      if (!huge) return void sock.write(jsonReply(chatCompletion("small")));
      // Chunked: one chunk whose size line promises DECLARED bytes.
      const head = headOf(DECLARED) + (headOf(0).includes("chunked") ? `${DECLARED.toString(16)}\r\n` : "");
      flood(sock, head, DECLARED, sent, () => upstream.closed.includes(peer.id));
    });
    started.push(upstream);
    const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url, SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES: String(LIMIT) });
    started.push(h);
    const a = await h.account(10);
    const before = h.balanceUnits(a.id);
    const r = await chat(h, a.key);
    expect(r.status).toBe(502);
    expect(r.body.error.code).toBe("upstream_error");
    expect(h.balanceUnits(a.id)).toEqual({ balance: before.balance, reserved: 0 });
    expect(h.ledgerSum(a.id)).toBe(before.balance);
    // The gateway stopped reading at the limit and hung up, long before the upstream could send
    // what it declared.
    expect(sent.bytes).toBeLessThan(DECLARED);
    while (upstream.closed.length === 0) await Bun.sleep(5);
    expect(upstream.closed).toEqual([1]);
    // Still serving: the health probe and an ordinary reply.
    expect((await fetch(h.base + "/healthz")).status).toBe(200);
    huge = false;
    const ok = await chat(h, a.key);
    expect(ok.status).toBe(200);
    expect(ok.body.choices[0].message.content).toBe("small");
  });

  test("a reply just under the limit is served", async () => {
    const content = "x".repeat(LIMIT - 1024);
    const upstream = rawUpstream((sock) => void sock.write(jsonReply(chatCompletion(content))));
    started.push(upstream);
    const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstream.url, SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES: String(LIMIT) });
    started.push(h);
    const a = await h.account(10);
    const r = await chat(h, a.key);
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message.content).toBe(content);
  });
});

describe("an upstream key with a control byte (set past start-up's check)", () => {
  test("is never written: 502 upstream_error (not the client's 400), the route's breaker counts it, nothing charged", async () => {
    // An engine that, like a real one, answers 400 to a head with a bare LF in it.
    const upstream = rawUpstream((sock, request) => {
      const head = request.slice(0, request.indexOf("\r\n\r\n"));
      if (/[^\r]\n/.test(head)) return void sock.write(jsonReply({ error: { message: "bad request" } }, 400));
      sock.write(jsonReply(chatCompletion("fine")));
    });
    started.push(upstream);
    // Start-up trims and checks SWITCHYARD_UPSTREAM_KEY; a registry built past it shows the request-time check.
    const routes = new ConfiguredRouteRegistry({ upstreamUrl: upstream.url, upstreamKey: "sk-abc\n", routes: null });
    const h = await startHarness({}, { routes });
    started.push(h);
    const a = await h.account(10);
    const before = h.balanceUnits(a.id);
    const r = await chat(h, a.key);
    expect(r.status).toBe(502);
    expect(r.body.error.code).toBe("upstream_error");
    expect(JSON.stringify(r.body)).not.toContain("sk-abc");
    expect(upstream.connections()).toBe(0);
    expect(routes.snapshot(["glm-4.6"])[0]!.failures).toBe(1);
    expect(h.balanceUnits(a.id)).toEqual({ balance: before.balance, reserved: 0 });
  });
});
