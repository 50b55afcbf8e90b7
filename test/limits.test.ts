/**
 * Per-account limits over real HTTP (docs/operate.md, "Limits, usage and metrics"): one shared rate meter and one in-flight counter
 * per account across model endpoints; 429 with Retry-After and x-ratelimit-* headers; slots held
 * until a streamed body ends and released on every path; concurrency refusals consume no rate.
 * On both stores: in memory beside SQLite, shared in PostgreSQL.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat, post, rateHeaders, readUntil, setLimits } from "./support/gateway-client";
import { describeEachStore } from "./support/stores";

describeEachStore("per-account limits", (store) => {
  let fake: FakeUpstream;
  let h: Harness;

  beforeAll(async () => {
    fake = startFakeUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_RATE_LIMIT_RPM: "50", SWITCHYARD_CONCURRENCY_LIMIT: "4" }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });
  beforeEach(() => fake.behave({}));

  const inFlight = async (accountId: string) => await h.server.services.limits.inFlight(accountId);

  /** Waits for the lifecycle to release slots that end just after the client saw the last byte. */
  async function drained(accountId: string) {
    for (let i = 0; i < 200 && (await inFlight(accountId)) > 0; i++) await Bun.sleep(5);
    return inFlight(accountId);
  }

  describe("rate limit", () => {
    test("defaults come from the environment and every authenticated response carries the headers", async () => {
      const a = await h.account(5);
      const res = await chat(h, a.key);
      expect(res.status).toBe(200);
      const { reset, ...counts } = rateHeaders(res);
      expect(counts).toEqual({ limit: "50", remaining: "49" });
      // One request's worth refills in 60 s / 50 = 1.2 s, less what passed since it was taken: the
      // shared PostgreSQL meter counts from its own clock, so a loaded machine can read "1.199s".
      const seconds = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(String(reset));
      expect(seconds).not.toBeNull();
      const resetS = Number(seconds![1]) / (seconds![2] === "ms" ? 1000 : 1);
      expect(resetS).toBeLessThanOrEqual(1.2);
      expect(resetS).toBeGreaterThan(1);
      const usage = await fetch(h.base + "/v1/usage", { headers: { authorization: `Bearer ${a.key}` } });
      expect(usage.status).toBe(200);
      // Reading usage reports the meter without consuming it.
      expect(rateHeaders(usage).limit).toBe("50");
      expect(rateHeaders(usage).remaining).toBe("49");
      // An error after admission still carries them.
      const bad = await chat(h, a.key, { max_tokens: 999_999 });
      expect(bad.status).toBe(400);
      expect(rateHeaders(bad).remaining).toBe("48");
    });

    test("the N+1th request in a window gets 429 rate_limit_exceeded, shared across chat, embeddings and speech", async () => {
      const a = await h.account(5);
      await setLimits(h, a.id, { rate_limit_rpm: 3 });
      const r1 = await chat(h, a.key);
      const r2 = await post(h, "/v1/embeddings", a.key, { model: "embedding-300m", input: "x" });
      const r3 = await post(h, "/v1/audio/speech", a.key, { model: "voice-82m", input: "x", voice: "af_heart" });
      expect([r1.status, rateHeaders(r1).remaining, rateHeaders(r2).remaining, rateHeaders(r3).remaining]).toEqual([200, "2", "1", "0"]);
      const before = await h.probe.ledgerSum(a.id);
      const refused = await chat(h, a.key);
      expect(refused.status).toBe(429);
      const body = (await refused.json()) as any;
      expect(body.error.code).toBe("rate_limit_exceeded");
      expect(body.error.type).toBe("rate_limit_error");
      expect(refused.headers.get("retry-after")).toBe("20");
      expect(refused.headers.get("x-request-id")).toMatch(/^req_/);
      const hdr = rateHeaders(refused);
      expect(hdr.limit).toBe("3");
      expect(hdr.remaining).toBe("0");
      expect(hdr.reset).toMatch(/^(59\.\d+s|1m0s)$/);
      // Refused before any work: nothing held, nothing charged, no slot kept.
      expect(await h.probe.ledgerSum(a.id)).toBe(before);
      expect((await h.probe.balance(a.id)).reserved).toBe(0);
      expect(await drained(a.id)).toBe(0);
      // Another account is not affected.
      const b = await h.account(5);
      expect((await chat(h, b.key)).status).toBe(200);
    });

    // Reproduces issue 10's "count_tokens consumes no rate limit (50 of 50 passed at 5 rpm)".
    test("count_tokens is admitted like every model endpoint: it spends rate (but no money)", async () => {
      const a = await h.account(5);
      await setLimits(h, a.id, { rate_limit_rpm: 5 });
      const count = () => post(h, "/v1/messages/count_tokens", a.key, { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] });
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await count()).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      const refused = await count();
      expect(((await refused.json()) as any).error.type).toBe("rate_limit_error");
      expect(refused.headers.get("retry-after")).not.toBeNull();
      // The chat that follows shares the same meter.
      expect((await chat(h, a.key)).status).toBe(429);
      // Nothing was charged or held.
      expect(await h.probe.balance(a.id)).toMatchObject({ balance: 5_000_000_000, reserved: 0 });
      expect(await drained(a.id)).toBe(0);
    });

    test("a per-account override takes effect at once and null restores the default", async () => {
      const a = await h.account(5);
      expect((await setLimits(h, a.id, { rate_limit_rpm: 7 })).rate_limit_rpm).toBe(7);
      expect(rateHeaders(await chat(h, a.key)).limit).toBe("7");
      expect((await setLimits(h, a.id, { rate_limit_rpm: null })).rate_limit_rpm).toBe(50);
      expect(rateHeaders(await chat(h, a.key)).limit).toBe("50");
    });
  });

  describe("concurrency limit", () => {
    test("holds while slow streams run; refusals leave rate untouched; slots free when streams end", async () => {
      fake.behave({ chunkDelayMs: 60 });
      const a = await h.account(5);
      await setLimits(h, a.id, { concurrency_limit: 2, rate_limit_rpm: 10 });
      const s1 = await chat(h, a.key, { stream: true });
      const s2 = await chat(h, a.key, { stream: true });
      expect([s1.status, s2.status]).toEqual([200, 200]);
      expect(rateHeaders(s2).remaining).toBe("8");
      // The handlers have returned, but the bodies are still streaming: both slots stay taken.
      const first = await readUntil(s1, (t) => t.includes("Hello"));
      expect(await inFlight(a.id)).toBe(2);
      for (let i = 0; i < 5; i++) {
        const r = await chat(h, a.key, { stream: true });
        expect(r.status).toBe(429);
        expect(((await r.json()) as any).error.code).toBe("concurrency_limit_exceeded");
        expect(r.headers.get("retry-after")).toBe("1");
        expect(rateHeaders(r)).toMatchObject({ limit: "10", remaining: "8" });
      }
      // Other endpoints share the counter.
      const e = await post(h, "/v1/embeddings", a.key, { model: "embedding-300m", input: "x" });
      expect(e.status).toBe(429);
      // Finish both streams; their slots come back.
      const rest1 = await readUntil(first.reader, () => false);
      expect(first.text + rest1.text).toContain("data: [DONE]");
      await s2.text();
      expect(await drained(a.id)).toBe(0);
      const after = await chat(h, a.key);
      expect(after.status).toBe(200);
      // Only the three admitted requests consumed rate: the six refusals did not.
      expect(rateHeaders(after).remaining).toBe("7");
      const metrics = await (await fetch(h.base + "/metrics")).text();
      expect(metrics).toMatch(/switchyard_limit_rejections_total\{limit="concurrency"\} [6-9]/);
    });

    test("with a limit of 1, back-to-back requests (plain, streamed, errors) are never refused", async () => {
      const a = await h.account(5);
      await setLimits(h, a.id, { concurrency_limit: 1, rate_limit_rpm: 1000 });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const kind = i % 3;
        const res = kind === 0 ? await chat(h, a.key) : kind === 1 ? await chat(h, a.key, { stream: true }) : await chat(h, a.key, { max_tokens: -1 });
        await res.text();
        statuses.push(res.status);
      }
      expect(statuses.filter((st) => st === 429)).toEqual([]);
      expect(statuses.filter((st) => st === 400).length).toBe(6);
    });

    test("a client that disconnects mid-stream gives its slot back", async () => {
      fake.behave({ chunkDelayMs: 100, words: Array.from({ length: 30 }, (_, i) => ` w${i}`) });
      const a = await h.account(5);
      await setLimits(h, a.id, { concurrency_limit: 1 });
      const ac = new AbortController();
      const s = await chat(h, a.key, { stream: true }, ac.signal);
      await readUntil(s, (t) => t.includes("w1"));
      expect(await inFlight(a.id)).toBe(1);
      ac.abort();
      expect(await drained(a.id)).toBe(0);
      expect((await chat(h, a.key, { stream: false })).status).toBe(200);
    });

    test("errors after admission release the slot (402, 400, 502, 503)", async () => {
      const a = await h.account("0.0001");
      await setLimits(h, a.id, { concurrency_limit: 1 });
      const poor = await chat(h, a.key, { max_tokens: 30_000 });
      expect(poor.status).toBe(402);
      expect((await chat(h, a.key, { max_tokens: 0 })).status).toBe(400);
      expect((await post(h, "/v1/embeddings", a.key, { model: "embedding-300m", input: "x" })).status).toBe(503);
      fake.behave({ failStatus: 500 });
      const failed = await chat(h, a.key, { max_tokens: 5 });
      expect(failed.status).toBe(502);
      expect(await drained(a.id)).toBe(0);
      fake.behave({ errorAfterChunks: 2 });
      const broken = await chat(h, a.key, { max_tokens: 5, stream: true });
      expect(await broken.text()).toContain("upstream_error");
      expect(await drained(a.id)).toBe(0);
      expect((await h.probe.balance(a.id)).reserved).toBe(0);
    });

    test("a request refused with 401 takes no slot and gets no rate headers", async () => {
      const res = await chat(h, "sk-not-a-key");
      expect(res.status).toBe(401);
      expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
    });
  });

  describe("admission comes before the body", () => {
    /**
     * Sends the headers of a POST declaring a body of `length` bytes, plus only its first byte,
     * and returns the status line if the server answers within `waitMs` (null if it waits for the
     * rest of the body, as it must for a request it admitted).
     */
    async function answerBeforeBody(path: string, headers: Record<string, string>, length = 8_000_000, waitMs = 1_500): Promise<string | null> {
      const url = new URL(h.base);
      let received = "";
      let resolve!: (line: string | null) => void;
      const answered = new Promise<string | null>((r) => (resolve = r));
      const socket = await Bun.connect({
        hostname: url.hostname,
        port: Number(url.port),
        socket: {
          data(_s, chunk) {
            received += new TextDecoder().decode(chunk);
            if (received.includes("\r\n")) resolve(received.slice(0, received.indexOf("\r\n")));
          },
          close() {
            resolve(received ? received.slice(0, received.indexOf("\r\n")) : null);
          },
        },
      });
      const head = [`POST ${path} HTTP/1.1`, `host: ${url.host}`, "content-type: application/json", `content-length: ${length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(head.join("\r\n") + "\r\n\r\n{");
      const timer = setTimeout(() => resolve(null), waitMs);
      const line = await answered;
      clearTimeout(timer);
      socket.end();
      return line;
    }

    test("a bad key, or an account over its limits, is refused without its 8 MB body being read", async () => {
      for (const path of ["/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/v1/embeddings", "/v1/audio/speech"]) {
        expect(await answerBeforeBody(path, { authorization: "Bearer sk-not-a-key" })).toBe("HTTP/1.1 401 Unauthorized");
      }
      const a = await h.account(5);
      await setLimits(h, a.id, { rate_limit_rpm: 1 });
      expect((await chat(h, a.key)).status).toBe(200);
      expect(await answerBeforeBody("/v1/chat/completions", { authorization: `Bearer ${a.key}` })).toBe("HTTP/1.1 429 Too Many Requests");
      expect(await answerBeforeBody("/v1/messages", { "x-api-key": a.key })).toBe("HTTP/1.1 429 Too Many Requests");
      // An admitted request waits for its body, as it must.
      const b = await h.account(5);
      expect(await answerBeforeBody("/v1/chat/completions", { authorization: `Bearer ${b.key}` }, 8_000_000, 300)).toBeNull();
      expect(await drained(b.id)).toBe(0);
    });
  });
});
