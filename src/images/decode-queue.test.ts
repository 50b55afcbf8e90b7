import { describe, expect, test } from "bun:test";
import { DecodeQueue } from "./decode-queue";
import { DomainError } from "../errors";

/** A decode the test finishes by hand, recording when it started. */
function controlled(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  return { job: () => (log.push(name), done.then(() => name)), finish: () => finish() };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("DecodeQueue: fair between accounts", () => {
  test("one account's many images cannot hold the decoder: another account's image goes next", async () => {
    const q = new DecodeQueue(1, 1_000_000);
    const started: string[] = [];
    const a = Array.from({ length: 6 }, (_, i) => controlled(started, `a${i}`));
    const b = Array.from({ length: 2 }, (_, i) => controlled(started, `b${i}`));
    const results = a.map((c) => q.run("acct_a", c.job));
    // B arrives after A queued all six.
    results.push(...b.map((c) => q.run("acct_b", c.job)));
    await tick();
    expect(started).toEqual(["a0"]);
    expect(q.stats).toEqual({ running: 1, waiting: 7 });
    const byName = new Map<string, ReturnType<typeof controlled>>([...a.map((c, i) => [`a${i}`, c] as const), ...b.map((c, i) => [`b${i}`, c] as const)]);
    for (let n = 0; n < 8; n++) {
      // Finish the one running now; the queue starts the next.
      byName.get(started.at(-1)!)!.finish();
      await tick();
    }
    expect(started).toEqual(["a0", "b0", "a1", "b1", "a2", "a3", "a4", "a5"]);
    expect(await Promise.all(results)).toEqual(["a0", "a1", "a2", "a3", "a4", "a5", "b0", "b1"]);
    expect(q.stats).toEqual({ running: 0, waiting: 0 });
  });

  test("at most `concurrency` decodes run at once, and a failing decode frees its slot", async () => {
    const q = new DecodeQueue(2, 1_000_000);
    const started: string[] = [];
    const x = controlled(started, "x");
    const failing = q.run("acct_a", async () => {
      started.push("bad");
      throw new Error("corrupt");
    });
    const ok = q.run("acct_b", x.job);
    const third = controlled(started, "third");
    const later = q.run("acct_c", third.job);
    await expect(failing).rejects.toThrow("corrupt");
    await tick();
    expect(started).toEqual(["bad", "x", "third"]);
    expect(q.stats.running).toBe(2);
    x.finish();
    third.finish();
    expect(await ok).toBe("x");
    expect(await later).toBe("third");
  });
});

describe("DecodeQueue: decode time is charged to the account", () => {
  test("an account past its budget gets 429 rate_limited with a retry time; another account is unaffected; time refills it", async () => {
    let now = 0;
    const q = new DecodeQueue(1, 600, () => now); // 600 ms per minute: 10 ms back per second
    await q.run("acct_a", async () => {
      now += 900; // this decode took 900 ms of the 600 ms budget
    });
    const refused = q.run("acct_a", async () => "never");
    await expect(refused).rejects.toBeInstanceOf(DomainError);
    const err = (await refused.catch((e) => e)) as DomainError;
    expect(err.kind).toBe("rate_limited");
    expect(err.message).toContain("600 ms per minute");
    // 300 ms over, refilled at 10 ms per second: 30 s.
    expect(err.retryAfterSeconds).toBe(30);
    expect(await q.run("acct_b", async () => "b decodes")).toBe("b decodes");
    now += 31_000;
    expect(await q.run("acct_a", async () => "a again")).toBe("a again");
  });

  test("queued jobs of an account that ran out are refused when their turn comes, without running", async () => {
    let now = 0;
    const q = new DecodeQueue(1, 100, () => now);
    let ran = 0;
    const first = q.run("acct_a", async () => {
      ran++;
      now += 500;
    });
    const second = q.run("acct_a", async () => {
      ran++;
    });
    await first;
    await expect(second).rejects.toThrow("limited to 100 ms per minute");
    expect(ran).toBe(1);
    expect(q.stats).toEqual({ running: 0, waiting: 0 });
  });
});
