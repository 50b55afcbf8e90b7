/** The long-count worker's share of a core (duty-cycle.ts), on a clock the test moves. */
import { describe, expect, test } from "bun:test";
import { DutyCycle } from "./duty-cycle";

/** Runs steps of `stepMs` for `wallMs` of simulated time, resting as told; returns the share worked. */
function share(percent: number, burstMs: number, stepMs: number, wallMs: number): { share: number; rests: number } {
  let t = 0;
  const duty = new DutyCycle(percent, burstMs, () => t);
  let worked = 0;
  let rests = 0;
  while (t < wallMs) {
    t += stepMs;
    worked += stepMs;
    const rest = duty.worked(stepMs);
    if (rest > 0) {
      rests++;
      t += rest;
    }
  }
  return { share: worked / t, rests };
}

describe("DutyCycle", () => {
  test.each<[string, number, number, number]>([
    ["half a core, 4 ms steps (random base64)", 50, 4, 0.5],
    ["half a core, 0.2 ms steps (prose)", 50, 0.2, 0.5],
    ["a tenth of a core", 10, 4, 0.1],
    ["three quarters", 75, 1, 0.75],
  ])("a sustained flood runs at its share: %s", (_name, percent, stepMs, expected) => {
    const { share: s } = share(percent, 250, stepMs, 60_000);
    expect(Math.abs(s - expected)).toBeLessThan(0.01);
  });

  test("work shorter than the burst runs without a rest", () => {
    const { share: s, rests } = share(50, 250, 4, 240);
    expect(rests).toBe(0);
    expect(s).toBe(1);
  });

  test("the burst comes back after idle time, and no more than the burst", () => {
    let t = 0;
    const duty = new DutyCycle(50, 100, () => t);
    t += 100; // 100 ms of work (earning 50) from a full burst of 100: 50 left
    expect(duty.worked(100)).toBe(0);
    t += 104; // 104 more earn 52 and spend 104: 2 ms behind, 4 ms of rest at half a core
    expect(duty.worked(104)).toBe(4);
    t += 4 + 60_000; // the rest, then a long idle spell: it earns back the burst, no more
    expect(duty.worked(0)).toBe(0);
    t += 200; // 200 ms of work earn 100 and spend 200 from the burst of 100: none behind
    expect(duty.worked(200)).toBe(0);
    t += 10; // 10 more earn 5: 5 behind, 10 ms of rest
    expect(duty.worked(10)).toBe(10);
  });

  test("short debts are carried, not slept one millisecond each", () => {
    let t = 0;
    const duty = new DutyCycle(50, 0, () => t);
    // Each 0.5 ms step at half a core puts the worker 0.25 ms behind: 0.5 ms more rest owed.
    for (let i = 0; i < 3; i++) {
      t += 0.5;
      expect(duty.worked(0.5)).toBe(0); // 0.5, 1, then 1.5 ms owed: too short for a timer, carried
    }
    t += 0.5;
    expect(duty.worked(0.5)).toBe(2); // 2 ms owed: slept all at once
  });

  test("100 percent never rests", () => {
    expect(share(100, 0, 4, 10_000)).toEqual({ share: 1, rests: 0 });
  });
});
