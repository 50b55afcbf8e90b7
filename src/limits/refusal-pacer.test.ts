/** Which refused large uploads are held (refusal-pacer.ts), on a clock the test moves. */
import { describe, expect, test } from "bun:test";
import { RefusalPacer } from "./refusal-pacer";

type Step = ["refuse", string, number] | ["release", string];

/** Runs the steps ([refuse, account, at ms] or [release, account]); returns each refusal's hold. */
function run(steps: Step[], perAccount = 2, total = 3): number[] {
  let t = 0;
  const pacer = new RefusalPacer({ windowMs: 1000, perAccount, total }, () => t);
  const holds: number[] = [];
  for (const s of steps) {
    if (s[0] === "release") pacer.release(s[1]);
    else {
      t = s[2];
      holds.push(pacer.refused(s[1]));
    }
  }
  return holds;
}

describe("RefusalPacer", () => {
  test.each<[string, Step[], number[]]>([
    ["a first refusal is answered at once", [["refuse", "A", 0]], [0]],
    ["one that comes within the window of the last is held for the window", [["refuse", "A", 0], ["refuse", "A", 500]], [0, 1000]],
    ["a client that waits Retry-After is never held", [["refuse", "A", 0], ["refuse", "A", 1000], ["refuse", "A", 2000]], [0, 0, 0]],
    ["each account on its own", [["refuse", "A", 0], ["refuse", "B", 10], ["refuse", "A", 20], ["refuse", "B", 30]], [0, 0, 1000, 1000]],
    [
      "at most perAccount held; past it answered at once, until one is released",
      [["refuse", "A", 0], ["refuse", "A", 1], ["refuse", "A", 2], ["refuse", "A", 3], ["release", "A"], ["refuse", "A", 4]],
      [0, 1000, 1000, 0, 1000],
    ],
    [
      "at most `total` held over all accounts",
      [["refuse", "A", 0], ["refuse", "A", 1], ["refuse", "A", 2], ["refuse", "B", 3], ["refuse", "B", 4], ["refuse", "C", 5], ["refuse", "C", 6]],
      [0, 1000, 1000, 0, 1000, 0, 0],
    ],
  ])("%s", (_name, steps, holds) => {
    expect(run(steps)).toEqual(holds);
  });

  test("held counts follow refusals and releases; a stray release changes nothing", () => {
    let t = 0;
    const pacer = new RefusalPacer({ windowMs: 1000, perAccount: 5, total: 10 }, () => t);
    pacer.refused("A");
    t = 1;
    pacer.refused("A");
    pacer.refused("A");
    expect([pacer.held("A"), pacer.held()]).toEqual([2, 2]);
    pacer.release("A");
    pacer.release("A");
    pacer.release("A");
    pacer.release("Z");
    expect([pacer.held("A"), pacer.held()]).toEqual([0, 0]);
  });

  test("accounts with nothing held are forgotten once many are remembered", () => {
    let t = 0;
    const pacer = new RefusalPacer({ windowMs: 1000, perAccount: 5, total: 10 }, () => t);
    for (let i = 0; i < 5000; i++) pacer.refused(`acct_${i}`);
    t = 2000;
    pacer.refused("late");
    // The sweep forgot the old ones: a refusal from one of them is a first one again.
    expect(pacer.refused("acct_1")).toBe(0);
    expect((pacer as unknown as { accounts: Map<string, unknown> }).accounts.size).toBeLessThan(100);
  });
});
