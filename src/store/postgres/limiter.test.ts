/**
 * The shared limiter against real PostgreSQL: the same admission semantics as the in-memory
 * limiter (one parameterised suite over both), then what only the shared one can promise —
 * one rate and one concurrency limit across instances, with no per-instance slack.
 */
import { describe, expect, test } from "bun:test";
import { AccountLimiter, type Limiter } from "../../limits/limiter";
import { usePgFixture } from "../../../test/support/postgres-store";

const f = usePgFixture();

interface Subject {
  limiter: Limiter;
  account(): Promise<string>;
  /** Waits until released slots are written. */
  settle(): Promise<void>;
}

const subjects: [string, () => Subject][] = [
  ["in memory", () => {
    let n = 0;
    return { limiter: new AccountLimiter(), account: async () => `mem_${++n}`, settle: async () => {} };
  }],
  ["PostgreSQL", () => ({ limiter: f.a.limiter, account: () => f.account(0), settle: () => f.a.limiter.flush() })],
];

describe.each(subjects)("admission semantics (%s)", (_name, make) => {
  test("rpm requests pass in a burst, then the rate refuses with the time to wait", async () => {
    const s = make();
    const acct = await s.account();
    const limits = { rateLimitRpm: 3, concurrencyLimit: 100 };
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await s.limiter.admit(acct, limits);
      if (!a.ok) throw new Error(`refused: ${a.reason}`);
      remaining.push(a.rate.remaining);
      a.slot.release();
    }
    expect(remaining).toEqual([2, 1, 0]);
    const refused = await s.limiter.admit(acct, limits);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.reason).toBe("rate");
    // One interval (20 s) minus the little time the test took.
    expect(refused.retryAfterMs).toBeGreaterThan(19_000);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(20_000);
    expect(refused.rate.remaining).toBe(0);
    const peek = await s.limiter.peek(acct, limits);
    expect(peek.limit).toBe(3);
    expect(peek.remaining).toBe(0);
    expect(peek.resetMs).toBeGreaterThan(59_000);
  });

  test("concurrency is checked first, and a refusal for concurrency consumes no rate", async () => {
    const s = make();
    const acct = await s.account();
    const limits = { rateLimitRpm: 3, concurrencyLimit: 1 };
    const first = await s.limiter.admit(acct, limits);
    expect(first.ok).toBe(true);
    for (let i = 0; i < 5; i++) expect(await s.limiter.admit(acct, limits)).toMatchObject({ ok: false, reason: "concurrency", retryAfterMs: 1000 });
    if (first.ok) {
      first.slot.release();
      first.slot.release(); // idempotent
    }
    await s.settle();
    const second = await s.limiter.admit(acct, limits);
    expect(second).toMatchObject({ ok: true, rate: { remaining: 1 } });
    if (second.ok) second.slot.release();
    await s.settle();
  });

  test("rates that do not divide a minute evenly still allow exactly rpm in a burst", async () => {
    const s = make();
    for (const rpm of [7, 13]) {
      const acct = await s.account();
      let admitted = 0;
      for (let i = 0; i < rpm + 3; i++) {
        const a = await s.limiter.admit(acct, { rateLimitRpm: rpm, concurrencyLimit: 1e6 });
        if (a.ok) {
          admitted++;
          a.slot.release();
        }
      }
      expect(admitted).toBe(rpm);
    }
    await s.settle();
  });
});

describe("one limit across instances", () => {
  test("rate_limit_rpm 10 across three instances: exactly 10 of 60 concurrent requests pass", async () => {
    const b = await f.instance();
    const c = await f.instance();
    const acct = await f.account(0);
    const limits = { rateLimitRpm: 10, concurrencyLimit: 1000 };
    const all = await Promise.all(Array.from({ length: 60 }, (_, i) => [f.a, b, c][i % 3]!.limiter.admit(acct, limits)));
    expect(all.filter((a) => a.ok).length).toBe(10);
    expect(all.filter((a) => !a.ok && a.reason === "rate").length).toBe(50);
    for (const a of all) if (a.ok) a.slot.release();
    await Promise.all([f.a, b, c].map((i) => i.limiter.flush()));
    expect(await f.a.limiter.inFlight(acct)).toBe(0);
  });

  test("concurrency_limit 2 across three instances: never more than 2 in flight", async () => {
    const b = await f.instance();
    const c = await f.instance();
    const acct = await f.account(0);
    const limits = { rateLimitRpm: 1_000_000, concurrencyLimit: 2 };
    let inFlight = 0;
    let most = 0;
    let admitted = 0;
    // 20 workers on three instances, each retrying until it has done 3 requests of ~5 ms.
    await Promise.all(Array.from({ length: 20 }, async (_, w) => {
      const inst = [f.a, b, c][w % 3]!;
      let done = 0;
      while (done < 3) {
        const a = await inst.limiter.admit(acct, limits);
        if (!a.ok) {
          await Bun.sleep(2);
          continue;
        }
        inFlight++;
        most = Math.max(most, inFlight);
        admitted++;
        expect(await f.a.limiter.inFlight(acct)).toBeLessThanOrEqual(2);
        await Bun.sleep(5);
        inFlight--;
        a.slot.release();
        await inst.limiter.flush();
        done++;
      }
    }));
    expect(admitted).toBe(60);
    expect(most).toBeLessThanOrEqual(2);
    expect(await f.a.limiter.inFlight(acct)).toBe(0);
  });
});
