import { expect, test } from "bun:test";
import { AccountBudget } from "./account-budget";

test("each account has its own budget; a take past the cap reserves nothing", () => {
  const b = new AccountBudget(100);
  expect(b.take("A", 60)).toBe(true);
  expect(b.take("A", 50)).toBe(false);
  expect(b.inUse("A")).toBe(60);
  expect(b.take("B", 100)).toBe(true);
  expect(b.take("A", 40)).toBe(true);
  b.give("A", 60);
  expect(b.inUse("A")).toBe(40);
  b.give("A", 40);
  expect(b.inUse("A")).toBe(0);
});

test("an account holding nothing may take one piece above the cap; force always takes", () => {
  const b = new AccountBudget(100);
  expect(b.take("A", 500)).toBe(true);
  expect(b.take("A", 1)).toBe(false);
  expect(b.take("A", 1, true)).toBe(true);
  expect(b.inUse("A")).toBe(501);
});
