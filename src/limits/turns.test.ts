import { expect, test } from "bun:test";
import { TakeTurns } from "./turns";

test("one holder per key at a time, in arrival order; other keys are independent", async () => {
  const turns = new TakeTurns();
  const order: string[] = [];
  const first = await turns.take("a");
  const second = turns.take("a").then((release) => (order.push("second"), release));
  const third = turns.take("a").then((release) => (order.push("third"), release));
  const other = await turns.take("b"); // not blocked by "a"
  expect(turns.queued("a")).toBe(3);
  await Bun.sleep(1);
  expect(order).toEqual([]);
  first();
  first(); // idempotent: does not let two through
  (await second)();
  (await third)();
  expect(order).toEqual(["second", "third"]);
  other();
  expect(turns.queued("a")).toBe(0);
  expect(turns.queued("b")).toBe(0);
});

test("a waiter whose signal aborts leaves the line without taking a turn", async () => {
  const turns = new TakeTurns();
  const first = await turns.take("a");
  const gone = new AbortController();
  const leaving = turns.take("a", gone.signal);
  const next = turns.take("a");
  gone.abort();
  await expect(leaving).rejects.toBeDefined();
  first();
  (await next)();
  expect(turns.queued("a")).toBe(0);
  await expect(turns.take("a", gone.signal)).rejects.toBeDefined();
});
