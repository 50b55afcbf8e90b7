/**
 * The token counter keeps counting off the event loop: the same numbers as counting on this
 * thread, while timers keep firing; short counts overtake long ones; a count whose caller left
 * is dropped.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { CountAborted, TokenCounter } from "./token-counter";
import { countTexts, promptTokenCount } from "./tokens";
import { loopTurnsWhile } from "../../test/support/event-loop";

// Long counts run at background priority: on a loaded machine they take a while.
setDefaultTimeout(60_000);
const counter = new TokenCounter();
afterAll(() => counter.close());

const LONG = "the quick brown fox jumps over the lazy dog, 123 times! ".repeat(20_000); // 1.1 MB

test("short and long texts get the same count as on this thread", async () => {
  expect(await counter.text("Hello, world!")).toBe(countTexts(["Hello, world!"]));
  expect(await counter.count([LONG, "a".repeat(100_000)])).toBe(countTexts([LONG, "a".repeat(100_000)]));
  const messages = [{ role: "user", content: LONG }, { role: "assistant", content: "ok" }];
  expect(await counter.prompt(messages, [[{ type: "function" }]])).toBe(promptTokenCount(messages, [[{ type: "function" }]]));
});

test("a long count leaves the event loop free", async () => {
  await counter.text(LONG); // the worker is started and warm
  // Event-loop turns while the count is in flight (ordering, not timing): counted inline, the
  // loop could not turn at all until the count returned.
  const { value: n, turns } = await loopTurnsWhile(() => counter.text(LONG + " once more"));
  expect(n).toBeGreaterThan(200_000);
  expect(turns).toBeGreaterThan(20);
});

test("a limit stops the worker's count early", async () => {
  const n = await counter.text(LONG, { limit: 1_000 });
  expect(n).toBeGreaterThan(1_000);
  expect(n).toBeLessThan(100_000);
});

test("a short count is answered while a long one is still being counted", async () => {
  const order: string[] = [];
  const long = counter.text(LONG + LONG + " long").then(() => order.push("long"));
  await Bun.sleep(20);
  const short = counter.text("a short question").then(() => order.push("short"));
  await Promise.all([long, short]);
  expect(order).toEqual(["short", "long"]);
});

test("a count whose caller left is dropped; the others are answered", async () => {
  const gone = new AbortController();
  const first = counter.text(LONG + "1");
  const second = counter.text(LONG + "2", { signal: gone.signal }).catch((e: unknown) => e);
  const third = counter.text(LONG + "3");
  gone.abort();
  expect(await first).toBeGreaterThan(0);
  expect(await second).toBeInstanceOf(CountAborted);
  expect(await third).toBeGreaterThan(0);
  await expect(counter.text("x", { signal: gone.signal })).rejects.toBeInstanceOf(CountAborted);
});

test("closing fails counts in flight and counts later ones inline", async () => {
  const c = new TokenCounter();
  const pending = c.text(LONG);
  c.close();
  await expect(pending).rejects.toThrow("closed");
  expect(await c.text("after close")).toBe(countTexts(["after close"]));
});
