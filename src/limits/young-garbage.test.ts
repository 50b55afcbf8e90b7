import { expect, test } from "bun:test";
import { YoungGarbage } from "./young-garbage";

test("collects once per `every` units of work, on a later turn, never twice at once", () => {
  let collections = 0;
  const queued: (() => void)[] = [];
  const g = new YoungGarbage(256, () => collections++, (run) => queued.push(run));
  for (let i = 0; i < 255; i++) g.made(1);
  expect(queued.length).toBe(0);
  g.made(1);
  // Scheduled, not run where the work was counted.
  expect(queued.length).toBe(1);
  expect(collections).toBe(0);
  // More work before it ran does not queue a second one.
  g.made(1000);
  expect(queued.length).toBe(1);
  queued.shift()!();
  expect(collections).toBe(1);
  g.made(255);
  expect(queued.length).toBe(0);
  g.made(1);
  expect(queued.length).toBe(1);
  queued.shift()!();
  expect(collections).toBe(2);
});

test("the default collector is the runtime's eden collection, on the next turn of the event loop", async () => {
  const g = new YoungGarbage(1);
  g.made(1);
  await new Promise((resolve) => setImmediate(resolve));
  g.made(1);
  await new Promise((resolve) => setImmediate(resolve));
});
