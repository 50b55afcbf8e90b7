import { describe, expect, test } from "bun:test";
import { AuthThrottle } from "./auth-throttle";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const opts = { burst: 3, refillMs: 10_000, maxSources: 100 };

describe("AuthThrottle", () => {
  test("a source may fail `burst` times, then waits one refill for each further attempt", () => {
    const c = clock();
    const t = new AuthThrottle(opts, c.now);
    for (let i = 0; i < 3; i++) {
      expect(t.check("1.2.3.4")).toEqual({ ok: true });
      t.failure("1.2.3.4");
    }
    expect(t.check("1.2.3.4")).toEqual({ ok: false, retryAfterMs: 10_000 });
    c.advance(4_000);
    expect(t.check("1.2.3.4")).toEqual({ ok: false, retryAfterMs: 6_000 });
    c.advance(6_000);
    expect(t.check("1.2.3.4")).toEqual({ ok: true });
    t.failure("1.2.3.4");
    expect(t.check("1.2.3.4").ok).toBe(false);
  });

  test("sources are throttled independently", () => {
    const t = new AuthThrottle(opts, clock().now);
    for (let i = 0; i < 3; i++) t.failure("a");
    expect(t.check("a").ok).toBe(false);
    expect(t.check("b").ok).toBe(true);
  });

  test("failures spread out over time never lock a source out", () => {
    const c = clock();
    const t = new AuthThrottle(opts, c.now);
    for (let i = 0; i < 50; i++) {
      expect(t.check("a").ok).toBe(true);
      t.failure("a");
      c.advance(10_000);
    }
  });

  test("a full bucket is forgotten, and the map stays bounded under a flood of sources", () => {
    const c = clock();
    const t = new AuthThrottle({ ...opts, maxSources: 10 }, c.now);
    for (let i = 0; i < 25; i++) t.failure(`s${i}`);
    expect(t.size).toBe(10);
    // The newest survive the eviction.
    t.failure("s24");
    t.failure("s24");
    expect(t.check("s24").ok).toBe(false);
    c.advance(60_000);
    expect(t.check("s24").ok).toBe(true);
    expect(t.size).toBeLessThan(10);
  });
});
