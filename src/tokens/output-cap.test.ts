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

  test("a stream far below its cap is neither kept nor counted: nothing goes to the token worker", async () => {
    let counted = 0;
    const spy = { text: (t: string) => ((counted += t.length), counter.text(t)), count: (ts: string[]) => ((counted += ts.join("").length), counter.count(ts)) } as unknown as TokenCounter;
    // 800 KB of long words under the cap of max_tokens 32768 × n 128 (5.2 M tokens): before, every
    // 16 Ki characters went to the token worker.
    const m = new OutputMeter(relayCap(32_768 * 128), spy);
    const piece = "supercalifragilistic".repeat(50);
    for (let i = 0; i < 800; i++) expect(m.admit(piece)).toBe(true);
    expect(counted).toBe(0);
    // Past a sixth of the cap the meter counts again, in the background.
    for (let i = 0; i < 200; i++) m.admit(piece);
    expect(counted).toBeGreaterThan(0);
  });

  test("an honest stream that ends at max_tokens is not cut short by the uncounted share", async () => {
    // 1000 tokens of " word" (one token each, five bytes) under the cap for max_tokens 1000.
    const { admitted } = await feed(relayCap(1000), Array(1000).fill(" word"));
    expect(admitted).toBe(1000);
  });
});
