/**
 * Issue 20, item 1: counting is shared fairly between accounts. One account's backlog of counts
 * of text that is slow to count (random base64) no longer holds another account's count until
 * the backlog drains; and an account may queue only so much text for counts its requests wait on.
 * Orders and queue contents are asserted, never durations.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { CountAborted, TokenCounter } from "./token-counter";
import { countTexts } from "./tokens";
import { DomainError } from "../errors";

setDefaultTimeout(120_000);
const counters: TokenCounter[] = [];
afterAll(() => counters.forEach((c) => c.close()));
const newCounter = (maxQueuedChars?: number) => {
  const c = new TokenCounter(undefined, { maxQueuedChars });
  counters.push(c);
  return c;
};

/** Random base64: about twenty times slower to count per character than prose. */
const base64 = (chars: number) => randomBytes(Math.ceil((chars * 3) / 4)).toString("base64").slice(0, chars);
const PROSE_40K = "The quick brown fox jumps over the lazy dog, then naps in the sun. ".repeat(600); // 40 KB
const PROSE_100K = PROSE_40K.repeat(2) + PROSE_40K.slice(0, 20_000); // 100 KB

test("another account's 100 KB count is served while one account's backlog of long counts waits", async () => {
  const counter = newCounter();
  await counter.text(base64(20_000)); // both workers started, the tokenizer loaded
  const order: string[] = [];
  const stop = new AbortController();
  // Account A: six 200,000-character counts of random base64, each sent to the worker whole.
  const backlog = Array.from({ length: 6 }, (_, i) =>
    counter.count([base64(200_000)], { account: "A", signal: stop.signal }).then(
      () => void order.push(`A${i}`),
      (e) => {
        if (!(e instanceof CountAborted)) throw e;
      },
    ),
  );
  expect(counter.queuedChars("A")).toBe(6 * 200_000);
  // Account B comes after the whole backlog was queued, in the same (long) lane.
  const b = await counter.count([PROSE_100K], { account: "B" });
  order.push("B");
  expect(b).toBe(countTexts([PROSE_100K]));
  // First-come-first-served would have counted all six of A's first.
  expect(order.indexOf("B")).toBeLessThanOrEqual(1);
  stop.abort();
  await Promise.all(backlog);
  expect(counter.queuedChars("A")).toBe(0);
});

test("an account's counts take turns with the service's own (usage, relayed output)", async () => {
  const counter = newCounter();
  const stop = new AbortController();
  const order: string[] = [];
  const backlog = [0, 1, 2].map((i) =>
    counter.count([base64(200_000)], { account: "A", signal: stop.signal }).then(
      () => void order.push(`A${i}`),
      () => {},
    ),
  );
  await counter.count([PROSE_100K]); // no account: the service's own lane
  order.push("own");
  expect(order.indexOf("own")).toBeLessThanOrEqual(1);
  stop.abort();
  await Promise.all(backlog);
});

test("in the short lane too: a flood of 15 KB counts does not hold another account's 15 KB count", async () => {
  const counter = newCounter();
  const stop = new AbortController();
  const order: string[] = [];
  const backlog = Array.from({ length: 40 }, (_, i) =>
    counter.count([base64(15_000)], { account: "A", signal: stop.signal }).then(
      () => void order.push(`A${i}`),
      () => {},
    ),
  );
  await counter.count([PROSE_40K.slice(0, 15_000)], { account: "B" });
  order.push("B");
  // First-come-first-served: all 40 of A's first.
  expect(order.indexOf("B")).toBeLessThanOrEqual(2);
  stop.abort();
  await Promise.all(backlog);
});

test("past its queue cap an account's admission counts get 429 naming the limit; others and billing counts still run", async () => {
  const counter = newCounter(300_000);
  const stop = new AbortController();
  const opts = { account: "A", signal: stop.signal };
  const first = counter.count([base64(250_000)], { ...opts, admission: true }).catch((e) => e);
  expect(counter.queuedChars("A")).toBe(250_000);

  const refused = await counter.count([base64(100_000)], { ...opts, admission: true }).catch((e) => e);
  expect(refused).toBeInstanceOf(DomainError);
  expect(refused.kind).toBe("rate_limited");
  expect(refused.code).toBe("token_queue_full");
  expect(refused.message).toContain("at most 300000 characters");
  expect(counter.queuedChars("A")).toBe(250_000);

  // Work already done is never refused; another account has its own cap.
  const billing = counter.count(["one two three"], { account: "A" });
  const other = counter.count([PROSE_40K], { account: "B", admission: true });
  expect(await billing).toBe(countTexts(["one two three"]));
  expect(await other).toBe(countTexts([PROSE_40K]));

  // Once A's queued count is gone, A is admitted again.
  stop.abort();
  // Aborted while queued or counting, or (on a fast machine) already counted by now: either way
  // it no longer holds A's share of the queue.
  const outcome = await first;
  expect(outcome instanceof CountAborted || typeof outcome === "number").toBe(true);
  expect(counter.queuedChars("A")).toBe(0);
  expect(await counter.count(["hello"], { account: "A", admission: true })).toBe(countTexts(["hello"]));
});
