import { afterAll, describe, expect, test } from "bun:test";
import { OutputMeter, relayCap } from "./output-cap";
import { countTextTokens } from "./tokens";
import { TokenCounter } from "./token-counter";

const counter = new TokenCounter();
afterAll(() => counter.close());

describe("relayCap", () => {
  test.each([
    [1, 1 + 1 + 16],
    [16, 16 + 4 + 16],
    [1000, 1000 + 250 + 16],
    [32768 * 2, 65536 + 16384 + 16],
  ])("output budget %i → relay cap %i", (maxOutput, cap) => expect(relayCap(maxOutput)).toBe(cap));
});

describe("OutputMeter", () => {
  /** Feeds pieces until one is refused; returns how many were admitted, and how many needed a count. */
  async function feed(cap: number, pieces: string[]) {
    const m = new OutputMeter(cap, counter);
    let delivered = "";
    let counts = 0;
    for (const [i, p] of pieces.entries()) {
      let fits = m.admit(p);
      if (fits instanceof Promise) {
        counts++;
        fits = await fits;
      }
      if (!fits) return { admitted: i, delivered, counts };
      delivered += p;
    }
    return { admitted: pieces.length, delivered, counts };
  }

  test.each([
    ["ASCII words within the cap by bytes alone", 40, Array(5).fill(" word"), 5],
    ["ASCII words past the byte bound, counted as tokens", 10, Array(50).fill(" word"), 10],
    ["one huge piece is refused whole", 16, ["x".repeat(10_000)], 0],
    ["multi-byte text: bytes overstate tokens, so tokens decide", 8, Array(20).fill(" 日本"), undefined],
  ] as const)("%s", async (_name, cap, pieces, expected) => {
    const { admitted, delivered } = await feed(cap, [...pieces]);
    if (expected !== undefined) expect(admitted).toBe(expected);
    expect(countTextTokens(delivered)).toBeLessThanOrEqual(cap);
  });

  test("empty deltas pass, but not forever: chunks are capped too", () => {
    const m = new OutputMeter(16, counter);
    let n = 0;
    while (m.admit("") === true && n < 10_000) n++;
    expect(n).toBe(2 * 16 + 64);
  });

  test("a long output is counted a few dozen times on its way to the cap, not once per chunk", async () => {
    const { admitted, delivered, counts } = await feed(1296, Array(5000).fill(" word"));
    expect(admitted).toBeGreaterThan(1000);
    expect(countTextTokens(delivered)).toBeLessThanOrEqual(1296);
    expect(counts).toBeLessThan(60);
  });
});
