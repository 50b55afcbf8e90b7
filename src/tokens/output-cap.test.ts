import { afterAll, describe, expect, test } from "bun:test";
import { OutputMeter, relayCap } from "./output-cap";
import { countTextTokens } from "./tokens";
import { TokenCounter } from "./token-counter";
import { TokenTally } from "./token-tally";

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
    const m = new OutputMeter(cap, new TokenTally(counter), counter);
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
    const m = new OutputMeter(16, new TokenTally(counter), counter);
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

  /** A counter that notes how many characters it was asked to count. */
  function spied() {
    const seen = { chars: 0 };
    const spy = {
      text: (t: string, o?: object) => ((seen.chars += t.length), counter.text(t, o)),
      count: (ts: string[], o?: object) => ((seen.chars += ts.join("").length), counter.count(ts, o)),
    } as unknown as TokenCounter;
    return { spy, seen };
  }

  test("a stream far below its cap is counted once, by its tally: the meter counts nothing of its own", async () => {
    const { spy, seen } = spied();
    // 1 MB of long words under the cap of max_tokens 32768 × n 128 (5.2 M tokens): before, the
    // meter counted what passed a sixth of the cap a second time, apart from the tally.
    const tally = new TokenTally(spy);
    const m = new OutputMeter(relayCap(32_768 * 128), tally, spy);
    const piece = "supercalifragilistic".repeat(50);
    for (let i = 0; i < 1000; i++) {
      expect(m.admit(piece)).toBe(true);
      await tally.caughtUp();
    }
    expect(tally.length).toBe(1000 * piece.length);
    const tokens = await tally.total();
    expect(tokens).toBeGreaterThan(0);
    expect(seen.chars).toBe(tally.length);
  });

  test("on the way to the cap each character is counted about once, not once for the cap and once for the bill", async () => {
    const { spy, seen } = spied();
    const tally = new TokenTally(spy);
    const m = new OutputMeter(relayCap(8192), tally, spy);
    let admitted = 0;
    for (let i = 0; i < 20_000; i++) {
      let fits = m.admit(" word");
      if (fits instanceof Promise) fits = await fits;
      if (!fits) break;
      admitted++;
      await tally.caughtUp();
    }
    expect(admitted).toBeGreaterThan(8192);
    expect(await tally.total()).toBeLessThanOrEqual(relayCap(8192));
    // The exact counts near the cap count the little not yet counted again, and the chunk.
    expect(seen.chars).toBeLessThan(tally.length * 1.25);
  });

  test("an honest stream that ends at max_tokens is not cut short by the uncounted share", async () => {
    // 1000 tokens of " word" (one token each, five bytes) under the cap for max_tokens 1000.
    const { admitted } = await feed(relayCap(1000), Array(1000).fill(" word"));
    expect(admitted).toBe(1000);
  });
});
