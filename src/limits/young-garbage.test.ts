import { expect, test } from "bun:test";
import { YoungGarbage } from "./young-garbage";

test("collects once per `every` units of work, not per call", () => {
  let collections = 0;
  const g = new YoungGarbage(256, () => collections++);
  for (let i = 0; i < 255; i++) g.made(1);
  expect(collections).toBe(0);
  g.made(1);
  expect(collections).toBe(1);
  g.made(1000);
  expect(collections).toBe(2);
  g.made(255);
  expect(collections).toBe(2);
});

test("the default collector is the runtime's eden collection (it runs and returns)", () => {
  const g = new YoungGarbage(1);
  expect(() => g.made(1)).not.toThrow();
});
