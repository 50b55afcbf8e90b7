/**
 * Routing end to end: several scripted upstreams at once behind SWITCHYARD_ROUTES, failing in
 * each way the contract names. Failover happens before the first byte and charges once; a
 * stream that breaks later ends with an error event and costs nothing; nothing upstream leaks.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { okJson, okStream, chunk, blackhole, refusedUrl, startScripted, type Reply, type ScriptedUpstream } from "./support/multi-upstream";
import { ledgerState, settled } from "./support/ledger-state";
import { expectedChatCost } from "./support/expected-cost";
import { postChat, sseEvents, streamedText, waitFor } from "./support/chat-client";

const MODEL = "glm-4.6";
const DEAD_MODEL = "minimax-m2";
const FORBIDDEN = ["alpha-vllm", "bravo-sglang", "dead-llamacpp", "127.0.0.1", "secret", "internal-host"];

let alpha: ScriptedUpstream;
let bravo: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };

const happy = (b: Record<string, any>) => (b.stream ? okStream(b, ["from", " bravo"]) : okJson(b, "from bravo"));

beforeAll(async () => {
  alpha = startScripted();
  bravo = startScripted(happy);
  const routes = {
    upstreams: {
      "alpha-vllm": { base_url: alpha.url, api_key: "sk-alpha-secret", timeouts: { first_byte_ms: 400, idle_ms: 400 } },
      "bravo-sglang": { base_url: bravo.url, timeouts: { first_byte_ms: 400 } },
      "dead-llamacpp": { base_url: refusedUrl() },
    },
    models: {
      // Weight 0 makes bravo a standby: alpha is always tried first, so failover is deterministic.
      [MODEL]: [{ upstream: "alpha-vllm", model: "alpha/glm", weight: 1 }, { upstream: "bravo-sglang", model: "bravo/glm", weight: 0 }],
      [DEAD_MODEL]: [{ upstream: "dead-llamacpp", model: "m2" }, { upstream: "bravo-sglang", model: "bravo/m2", weight: 0 }],
    },
    // Never open in this file's failover tests (the breaker has its own file).
    circuit_breaker: { failures: 1000 },
  };
  h = await startHarness({ SWITCHYARD_ROUTES: JSON.stringify(routes) });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  alpha.stop();
  bravo.stop();
});
beforeEach(() => {
  alpha.requests.length = 0;
  bravo.requests.length = 0;
  alpha.aborted = 0;
  bravo.script(happy);
});

function noLeak(text: string) {
  for (const f of FORBIDDEN) expect(text).not.toContain(f);
}

const upstreamError = { error: { message: "secret detail at internal-host:8000", type: "server_error" } };
const failures: [string, (b: Record<string, any>) => Reply][] = [
  ["500", () => ({ status: 500, json: upstreamError })],
  ["502", () => ({ status: 502, json: upstreamError })],
  ["503", () => ({ status: 503, json: upstreamError })],
  ["429", () => ({ status: 429, json: upstreamError })],
  ["401 (our key refused: a route fault)", () => ({ status: 401, json: upstreamError })],
  ["no response headers within first_byte_ms", () => ({ hang: true })],
  ["headers, then no first chunk within first_byte_ms", (b) => (b.stream ? { sse: [{ stall: true }] } : { hang: true })],
];

describe("failover before the first byte", () => {
  for (const stream of [false, true]) {
    test.each(failures)(`alpha fails with %s → bravo serves it, charged once (stream: ${stream})`, async (_kind, reply) => {
      alpha.script(reply);
      const before = ledgerState(h, acct.id);
      const res = await postChat(h.base, acct.key, { model: MODEL, stream, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      let text: string;
      if (stream) {
        const events = await sseEvents(res);
        text = streamedText(events);
        expect(events.at(-1)).toBe("[DONE]");
      } else {
        const body = await res.json();
        text = body.choices[0].message.content;
        expect(body.model).toBe(MODEL);
      }
      expect(text).toBe("from bravo");
      expect(alpha.requests.length).toBe(1);
      expect(bravo.requests.length).toBe(1);
      expect(alpha.requests[0]!.model).toBe("alpha/glm");
      expect(bravo.requests[0]!.model).toBe("bravo/glm");
      const after = await settled(h, acct.id);
      expect(after.charges - before.charges).toBe(1);
      expect(before.balance - after.balance).toBe(expectedChatCost(MODEL, 10, 2));
      expect(after.reserved).toBe(0);
    });
  }

  test("a refused connection moves on to the next route; attempts are counted by route label only", async () => {
    const attempts = h.server.services.metrics.counter("switchyard_upstream_attempts_total", "");
    const before = attempts.get({ route: `${DEAD_MODEL}#0`, outcome: "connect" });
    const res = await postChat(h.base, acct.key, { model: DEAD_MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    expect(bravo.requests.map((r) => r.model)).toEqual(["bravo/m2"]);
    expect(attempts.get({ route: `${DEAD_MODEL}#0`, outcome: "connect" })).toBe(before + 1);
    expect(attempts.get({ route: `${DEAD_MODEL}#1`, outcome: "ok" })).toBeGreaterThanOrEqual(1);
  });

  test("a host that never completes the TCP handshake fails over after connect_ms, not first_byte_ms", async () => {
    const hole = await blackhole();
    const b = startScripted((body) => okJson(body, "rescued"));
    const h2 = await startHarness({
      SWITCHYARD_ROUTES: JSON.stringify({
        upstreams: { hole: { base_url: hole.url, timeouts: { connect_ms: 200, first_byte_ms: 20_000 } }, ok: { base_url: b.url } },
        models: { [MODEL]: [{ upstream: "hole", weight: 1 }, { upstream: "ok", weight: 0 }] },
      }),
    });
    try {
      const k = await h2.account(10);
      const res = await postChat(h2.base, k.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      expect((await res.json()).choices[0].message.content).toBe("rescued");
      const attempts = h2.server.services.metrics.counter("switchyard_upstream_attempts_total", "");
      expect(attempts.get({ route: `${MODEL}#0`, outcome: "connect" })).toBe(1);
      expect(attempts.get({ route: `${MODEL}#0`, outcome: "timeout" })).toBe(0);
    } finally {
      await h2.stop();
      b.stop();
      hole.close();
    }
  });

  test("a 400 is the request's fault: not retried, answered 400 without the upstream's words, not billed", async () => {
    alpha.script(() => ({ status: 400, json: upstreamError }));
    const before = ledgerState(h, acct.id);
    const res = await postChat(h.base, acct.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(400);
    const text = await res.text();
    noLeak(text);
    expect(JSON.parse(text).error.type).toBe("invalid_request_error");
    expect(bravo.requests.length).toBe(0);
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
    expect(after.charges).toBe(before.charges);
  });

  test("an upstream's context-length refusal maps to context_length_exceeded", async () => {
    alpha.script(() => ({ status: 400, json: { error: { message: "This model's maximum context length is 8192 tokens at internal-host" } } }));
    const res = await postChat(h.base, acct.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe("context_length_exceeded");
    noLeak(JSON.stringify(body));
  });

  const allFail: [string, Reply, number, string][] = [
    ["5xx everywhere", { status: 500, json: upstreamError }, 502, "upstream_error"],
    ["429 everywhere", { status: 429, json: upstreamError }, 503, "model_unavailable"],
  ];
  test.each(allFail)("%s → %i %s, nothing billed, nothing leaked", async (_name, reply, status, code) => {
    alpha.script(() => reply);
    bravo.script(() => reply);
    const before = ledgerState(h, acct.id);
    for (const stream of [false, true]) {
      const res = await postChat(h.base, acct.key, { model: MODEL, stream, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(status);
      const text = await res.text();
      noLeak(text + JSON.stringify([...res.headers]));
      expect(JSON.parse(text).error.code).toBe(code);
      if (status === 503) expect(res.headers.get("retry-after")).not.toBeNull();
    }
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
    expect(after.entries).toBe(before.entries);
    expect(after.pendingHolds).toBe(0);
  });

  test("every route timing out → 504 upstream_timeout, not billed", async () => {
    alpha.script(() => ({ hang: true }));
    bravo.script((b) => (b.stream ? { sse: [{ stall: true }] } : { hang: true }));
    const before = ledgerState(h, acct.id);
    for (const stream of [false, true]) {
      const res = await postChat(h.base, acct.key, { model: MODEL, stream, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(504);
      const text = await res.text();
      noLeak(text);
      expect(JSON.parse(text).error.code).toBe("upstream_timeout");
    }
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
    expect(after.entries).toBe(before.entries);
  });
});

describe("after the first byte", () => {
  test("an idle stall mid-stream ends the stream with an error event; the upstream is stopped; nothing billed", async () => {
    alpha.script((b) => ({ sse: [chunk(b, { role: "assistant", content: "par" }), chunk(b, { content: "tial" }), { stall: true }] }));
    const before = ledgerState(h, acct.id);
    const res = await postChat(h.base, acct.key, { model: MODEL, stream: true, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    const events = await sseEvents(res);
    const last = events.at(-1) as Record<string, any>;
    expect(last.error.code).toBe("upstream_error");
    expect(streamedText(events)).toBe("partial");
    expect(bravo.requests.length).toBe(0); // bytes were relayed: no silent retry
    expect(await waitFor(() => alpha.aborted === 1)).toBe(true);
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
    expect(after.charges).toBe(before.charges);
    noLeak(JSON.stringify(events));
  });

  test("an upstream connection dropped mid-stream ends with an error event, not billed", async () => {
    alpha.script((b) => ({ sse: [chunk(b, { role: "assistant", content: "a" }), { pause: 20 }, { drop: true }] }));
    const before = ledgerState(h, acct.id);
    const res = await postChat(h.base, acct.key, { model: MODEL, stream: true, messages: [{ role: "user", content: "hi" }] });
    const events = await sseEvents(res);
    expect((events.at(-1) as Record<string, any>).error.code).toBe("upstream_error");
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
  });

  test("a client disconnect mid-stream aborts the upstream request at once", async () => {
    alpha.script((b) => okStream(b, Array.from({ length: 50 }, (_, i) => `w${i} `), 50));
    const client = new AbortController();
    const res = await postChat(h.base, acct.key, { model: MODEL, stream: true, messages: [{ role: "user", content: "hi" }] }, client.signal);
    const reader = res.body!.getReader();
    await reader.read();
    client.abort();
    // 50 chunks x 50 ms = 2.5 s if it ran to the end; the abort must arrive well before.
    expect(await waitFor(() => alpha.aborted === 1, 1_000)).toBe(true);
    const after = await settled(h, acct.id);
    expect(after.reserved).toBe(0);
  });

  test("a client disconnect while waiting for headers aborts the upstream request and costs nothing", async () => {
    alpha.script(() => ({ hang: true }));
    const before = ledgerState(h, acct.id);
    const client = new AbortController();
    const pending = postChat(h.base, acct.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] }, client.signal).catch(() => null);
    await waitFor(() => alpha.requests.length === 1);
    client.abort();
    await pending;
    expect(await waitFor(() => alpha.aborted === 1, 1_000)).toBe(true);
    expect(bravo.requests.length).toBe(0);
    const after = await settled(h, acct.id);
    expect(after.balance).toBe(before.balance);
    expect(after.reserved).toBe(0);
  });
});

describe("weighted choice", () => {
  test("two routes of equal weight both take traffic", async () => {
    // A second harness, so this file's standby layout stays deterministic.
    const a = startScripted();
    const b = startScripted();
    const h2 = await startHarness({
      SWITCHYARD_ROUTES: JSON.stringify({
        upstreams: { a: { base_url: a.url }, b: { base_url: b.url } },
        models: { [MODEL]: [{ upstream: "a" }, { upstream: "b" }] },
      }),
    });
    try {
      const k = await h2.account(10);
      for (let i = 0; i < 40; i++) {
        const res = await postChat(h2.base, k.key, { model: MODEL, messages: [{ role: "user", content: "hi" }] });
        expect(res.status).toBe(200);
      }
      // Each request picks a with probability 1/2: all 40 on one side has odds 2^-39.
      expect(a.requests.length).toBeGreaterThan(0);
      expect(b.requests.length).toBeGreaterThan(0);
      expect(a.requests.length + b.requests.length).toBe(40);
    } finally {
      await h2.stop();
      a.stop();
      b.stop();
    }
  });
});
