/** The token workers' turn order (queue.ts), as tables: which job has the next step. */
import { describe, expect, test } from "bun:test";
import { FairQueue } from "./queue";

type Step = ["push", string, string] | ["step", boolean] | ["remove", string, string];

/** Runs the steps; each "step" records the job whose turn it was (then `done` ends it or not). */
function run(steps: Step[]): string[] {
  const q = new FairQueue<string>();
  const served: string[] = [];
  for (const s of steps) {
    if (s[0] === "push") q.push(s[1], s[2]);
    else if (s[0] === "remove") q.remove(s[1], s[2]);
    else {
      served.push(q.peek() ?? "-");
      q.turn(s[1]);
    }
  }
  return served;
}

const step = (done = false): Step => ["step", done];

describe("FairQueue", () => {
  test.each<[string, Step[], string[]]>([
    ["one account: its jobs in order, each until done", [["push", "A", "a1"], ["push", "A", "a2"], step(), step(true), step(true), step()], ["a1", "a1", "a2", "-"]],
    [
      "a backlog and a newcomer take turns step by step",
      [["push", "A", "a1"], ["push", "A", "a2"], ["push", "A", "a3"], step(), ["push", "B", "b1"], step(), step(), step(), step(true), step()],
      ["a1", "b1", "a1", "b1", "a1", "b1"],
    ],
    [
      "accounts that had nothing queued go first, in arrival order; then all take turns",
      [["push", "A", "a1"], ["push", "B", "b1"], ["push", "C", "c1"], step(), ["push", "D", "d1"], step(), step(), step(), step()],
      ["a1", "b1", "c1", "d1", "a1"],
    ],
    [
      "a finished account leaves the ring; the others go on in turn",
      [["push", "A", "a1"], ["push", "B", "b1"], ["push", "B", "b2"], step(true), step(true), step(), step(true), step()],
      ["a1", "b1", "b2", "b2", "-"],
    ],
    [
      "a job taken out (its caller left) is skipped; an emptied lane leaves the ring",
      [["push", "A", "a1"], ["push", "A", "a2"], ["push", "B", "b1"], ["remove", "A", "a1"], step(), step(), ["remove", "A", "a2"], step(), step()],
      ["a2", "b1", "b1", "b1"],
    ],
  ])("%s", (_name, steps, expected) => {
    expect(run(steps)).toEqual(expected);
  });

  test("size counts queued jobs over all accounts; removing an unknown job changes nothing", () => {
    const q = new FairQueue<number>();
    q.push("A", 1);
    q.push("B", 2);
    q.push("A", 3);
    expect(q.size).toBe(3);
    expect(q.remove("B", 9)).toBe(false);
    expect(q.remove("C", 1)).toBe(false);
    q.turn(true);
    expect(q.size).toBe(2);
    expect(q.remove("B", 2)).toBe(true);
    expect(q.peek()).toBe(3);
    expect(q.size).toBe(1);
  });
});
