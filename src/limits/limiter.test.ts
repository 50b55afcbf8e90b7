import { describe, expect, test } from "bun:test";
import { AccountLimiter, durationText, rateHeaders, retryAfterSeconds } from "./limiter";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("AccountLimiter rate (GCRA)", () => {
  test("rpm requests pass in a burst, the next one is refused until one interval passes", () => {
    const c = clock();
    const l = new AccountLimiter(c.now);
    const limits = { rateLimitRpm: 3, concurrencyLimit: 100 };
    const seen = [1, 2, 3].map(() => {
      const a = l.admit("a", limits);
      if (!a.ok) throw new Error("refused");
      a.slot.release();
      return [a.rate.remaining, a.rate.resetMs];
    });
    expect(seen).toEqual([[2, 20_000], [1, 40_000], [0, 60_000]]);
    const refused = l.admit("a", limits);
    expect(refused).toMatchObject({ ok: false, reason: "rate", retryAfterMs: 20_000, rate: { limit: 3, remaining: 0, resetMs: 60_000 } });
    c.advance(20_000);
    expect(l.admit("a", limits).ok).toBe(true);
  });

  test("accounts are metered independently", () => {
    const l = new AccountLimiter(clock().now);
    const limits = { rateLimitRpm: 1, concurrencyLimit: 5 };
    expect(l.admit("a", limits).ok).toBe(true);
    expect(l.admit("a", limits).ok).toBe(false);
    expect(l.admit("b", limits).ok).toBe(true);
  });

  test("rates that do not divide a minute evenly still allow exactly rpm in a burst", () => {
    for (const rpm of [7, 13, 600, 997]) {
      const l = new AccountLimiter(clock().now);
      let admitted = 0;
      for (let i = 0; i < rpm + 5; i++) {
        const a = l.admit("a", { rateLimitRpm: rpm, concurrencyLimit: 1e6 });
        if (a.ok) admitted++;
      }
      expect(admitted).toBe(rpm);
    }
  });

  test("peek reports without consuming", () => {
    const l = new AccountLimiter(clock().now);
    const limits = { rateLimitRpm: 4, concurrencyLimit: 4 };
    expect(l.peek("a", limits)).toEqual({ limit: 4, remaining: 4, resetMs: 0 });
    l.admit("a", limits);
    expect(l.peek("a", limits)).toEqual({ limit: 4, remaining: 3, resetMs: 15_000 });
    expect(l.peek("a", limits)).toEqual({ limit: 4, remaining: 3, resetMs: 15_000 });
  });
});

describe("AccountLimiter concurrency", () => {
  test("the limit holds until a slot is released; refusals do not consume rate", () => {
    const l = new AccountLimiter(clock().now);
    const limits = { rateLimitRpm: 10, concurrencyLimit: 2 };
    const a = l.admit("a", limits);
    const b = l.admit("a", limits);
    expect([a.ok, b.ok]).toEqual([true, true]);
    for (let i = 0; i < 20; i++) {
      const r = l.admit("a", limits);
      expect(r).toMatchObject({ ok: false, reason: "concurrency", retryAfterMs: 1000, rate: { remaining: 8 } });
    }
    if (!a.ok) throw new Error("unreachable");
    a.slot.release();
    a.slot.release(); // idempotent: a second release must not free someone else's slot
    expect(l.inFlight("a")).toBe(1);
    const c = l.admit("a", limits);
    expect(c).toMatchObject({ ok: true, rate: { remaining: 7 } });
    expect(l.admit("a", limits).ok).toBe(false);
  });

  test("idle accounts are forgotten once their bucket is full again", () => {
    const c = clock();
    const l = new AccountLimiter(c.now);
    const a = l.admit("a", { rateLimitRpm: 60, concurrencyLimit: 1 });
    c.advance(5_000);
    if (a.ok) a.slot.release();
    expect(l.totalInFlight()).toBe(0);
    expect(l.peek("a", { rateLimitRpm: 60, concurrencyLimit: 1 }).remaining).toBe(60);
  });
});

describe("header text", () => {
  test.each([
    [0, "0s"],
    [-5, "0s"],
    [120, "120ms"],
    [0.2, "1ms"],
    [1000, "1s"],
    [20_000, "20s"],
    [60_000, "1m0s"],
    [90_500, "1m30.5s"],
    [360_000, "6m0s"],
  ] as const)("%p ms → %p", (ms, text) => {
    expect(durationText(ms)).toBe(text);
  });
  test.each([
    [1, "1"],
    [999, "1"],
    [1000, "1"],
    [1001, "2"],
    [20_000, "20"],
  ] as const)("Retry-After for %p ms is %p", (ms, s) => {
    expect(retryAfterSeconds(ms)).toBe(s);
  });
  test("rateHeaders names the three OpenAI headers", () => {
    expect(rateHeaders({ limit: 5, remaining: 4, resetMs: 12_000 })).toEqual({
      "x-ratelimit-limit-requests": "5",
      "x-ratelimit-remaining-requests": "4",
      "x-ratelimit-reset-requests": "12s",
    });
  });
});
