import { describe, expect, test } from "bun:test";
import { SignInLimit } from "./sign-in-limit";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe("SignInLimit", () => {
  test("per key: `keyPerMinute` at once, then one every 60 s / keyPerMinute; keys are independent", () => {
    const c = clock();
    const l = new SignInLimit({ keyPerMinute: 3, addressPerMinute: 100 }, c.now);
    for (let i = 0; i < 3; i++) expect(l.withKey("key_a")).toEqual({ ok: true });
    expect(l.withKey("key_a")).toEqual({ ok: false, retryAfterMs: 20_000 });
    expect(l.withKey("operator")).toEqual({ ok: true });
    c.advance(19_999);
    expect(l.withKey("key_a").ok).toBe(false);
    c.advance(1);
    expect(l.withKey("key_a")).toEqual({ ok: true });
    expect(l.withKey("key_a").ok).toBe(false);
  });

  test("a refused sign-in spends nothing: waiting out Retry-After is enough", () => {
    const c = clock();
    const l = new SignInLimit({ keyPerMinute: 1, addressPerMinute: 1 }, c.now);
    expect(l.fromAddress("1.2.3.4").ok).toBe(true);
    for (let i = 0; i < 50; i++) expect(l.fromAddress("1.2.3.4").ok).toBe(false);
    c.advance(60_000);
    expect(l.fromAddress("1.2.3.4").ok).toBe(true);
  });

  test("per address, apart from per key", () => {
    const l = new SignInLimit({ keyPerMinute: 1, addressPerMinute: 2 }, clock().now);
    expect(l.fromAddress("1.2.3.4").ok).toBe(true);
    expect(l.fromAddress("1.2.3.4").ok).toBe(true);
    expect(l.fromAddress("1.2.3.4").ok).toBe(false);
    expect(l.fromAddress("1.2.3.5").ok).toBe(true);
    expect(l.withKey("1.2.3.4").ok).toBe(true);
  });
});
