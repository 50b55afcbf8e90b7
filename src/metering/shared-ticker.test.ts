import { expect, test } from "bun:test";
import { activePeriods, everyPeriod } from "./shared-ticker";

test("checks of one period share a timer, which goes once the last is removed", async () => {
  const before = activePeriods();
  let a = 0;
  let b = 0;
  let c = 0;
  const stopA = everyPeriod(10, () => a++);
  const stopB = everyPeriod(10, () => b++);
  const stopC = everyPeriod(25, () => c++);
  expect(activePeriods()).toBe(before + 2);
  await Bun.sleep(60);
  expect(a).toBeGreaterThanOrEqual(2);
  expect(b).toBeGreaterThanOrEqual(2);
  expect(c).toBeGreaterThanOrEqual(1);
  stopA();
  const bAt = b;
  await Bun.sleep(30);
  expect(b).toBeGreaterThan(bAt);
  const aAt = a;
  stopB();
  stopB();
  expect(activePeriods()).toBe(before + 1);
  stopC();
  expect(activePeriods()).toBe(before);
  await Bun.sleep(30);
  expect(a).toBe(aAt);
});

test("a check that throws does not stop the others of its period", async () => {
  let ran = 0;
  const stopBad = everyPeriod(10, () => {
    throw new Error("boom");
  });
  const stopGood = everyPeriod(10, () => ran++);
  await Bun.sleep(40);
  stopBad();
  stopGood();
  expect(ran).toBeGreaterThanOrEqual(2);
});
