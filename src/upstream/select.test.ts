import { describe, expect, test } from "bun:test";
import { planRoutes, weightedOrder } from "./select";

/** A fixed sequence of "random" numbers in [0, 1). */
const seq = (...xs: number[]) => {
  let i = 0;
  return () => xs[i++ % xs.length]!;
};

describe("weightedOrder", () => {
  test.each([
    // [weights, random draws, expected order of names]
    [[3, 1], [0.0], ["a", "b"]],
    [[3, 1], [0.74], ["a", "b"]],
    [[3, 1], [0.76], ["b", "a"]],
    [[1, 1, 2], [0.99, 0.0], ["c", "a", "b"]],
    [[0, 1], [0.5], ["b", "a"]], // weight 0 is a standby, always last
    [[0, 0], [0.5], ["a", "b"]], // only standbys: file order
  ] as [number[], number[], string[]][])("weights %p, draws %p → %p", (weights, draws, expected) => {
    const items = weights.map((weight, i) => ({ name: "abc"[i]!, weight }));
    expect(weightedOrder(items, seq(...draws)).map((r) => r.name)).toEqual(expected);
  });

  test("traffic splits by weight (first choice frequency over a uniform grid of draws)", () => {
    const items = [{ name: "a", weight: 3 }, { name: "b", weight: 1 }];
    let a = 0;
    for (let i = 0; i < 1000; i++) if (weightedOrder(items, () => (i + 0.5) / 1000)[0]!.name === "a") a++;
    expect(a).toBe(750);
  });

  test("every route appears exactly once", () => {
    const items = [1, 2, 3, 4, 5].map((w) => ({ weight: w }));
    for (let i = 0; i < 50; i++) expect(new Set(weightedOrder(items)).size).toBe(5);
  });
});

describe("planRoutes", () => {
  const std = { name: "std", weight: 1, priority: false };
  const prio = { name: "prio", weight: 1, priority: true };
  const names = (p: { route: { name: string }; hinted: boolean }[]) => p.map((x) => `${x.route.name}${x.hinted ? "+hint" : ""}`);

  test.each([
    ["default", [std, prio], ["std"]],
    ["priority", [std, prio], ["prio", "std+hint"]],
    ["priority", [std], ["std+hint"]],
    ["default", [prio], ["prio"]], // a model with only priority routes still serves standard requests
    ["priority", [prio], ["prio"]],
    ["default", [], []],
  ] as ["default" | "priority", typeof std[], string[]][])("tier %s over %j → %p", (tier, routes, expected) => {
    expect(names(planRoutes(routes, tier))).toEqual(expected);
  });
});
