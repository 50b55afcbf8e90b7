/**
 * A text counted piece by piece as it arrives gets the same count as the whole text counted at
 * once (cuts fall where the tokenizer starts a new token anyway), without keeping it whole.
 */
import { afterAll, expect, test } from "bun:test";
import { TokenCounter } from "./token-counter";
import { KEEP_CHARS, TokenTally } from "./token-tally";
import { STREAM_HIGH_WATER_BYTES } from "../metering/producer-stream";
import { MAX_READ_BYTES } from "../upstream/http1/idle-reader";
import { countTextTokens } from "./tokens";

const counter = new TokenCounter();
afterAll(() => counter.close());

function rng(seed: number) {
  return () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
}

/** Splits text into random-sized pieces, as a stream's chunks arrive. */
function pieces(text: string, seed: number, max = 40): string[] {
  const r = rng(seed);
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = 1 + Math.floor(r() * max);
    out.push(text.slice(i, i + n));
    i += n;
  }
  return out;
}

const WORDS = ["The", "quick", "brown", "fox's", "naïve", "Straße", "über", "日本語", "x86_64", "don't", "2024", "!!", "\n", "\n\n", "  ", "\t", "—", "😀", "Ἀθῆναι", "Привет"];
function prose(seed: number, chars: number): string {
  const r = rng(seed);
  let s = "";
  while (s.length < chars) s += WORDS[Math.floor(r() * WORDS.length)] + (r() < 0.8 ? " " : r() < 0.5 ? ", " : ".\n");
  return s;
}

test.each([
  ["prose with punctuation, newlines and several scripts", prose(1, 300_000)],
  ["code-like text", "function f(a, b) {\n  return a + b; // sum\n}\n".repeat(8_000)],
  ["words only", "lorem ".repeat(50_000)],
  ["spaces before non-letters", "a 1 b 2 c 3 , d ! e ".repeat(20_000)],
])("%s: the tally equals the whole text's count", async (_, text) => {
  for (const seed of [1, 2]) {
    const tally = new TokenTally(counter);
    for (const p of pieces(text, seed)) tally.add(p);
    expect(await tally.total()).toBe(countTextTokens(text));
  }
});

// Such text is one long pre-token, itself counted in parts (tokens.ts): an estimate either way,
// and a cut shifts where the parts of a repeating pattern begin.
test("text with no place to cut is counted in large parts, close to the whole's count", async () => {
  const text = "a".repeat(600_000) + "中文字符".repeat(100_000);
  const tally = new TokenTally(counter);
  for (const p of pieces(text, 3, 500)) tally.add(p);
  const whole = countTextTokens(text);
  expect(Math.abs((await tally.total()) - whole)).toBeLessThanOrEqual(whole * 0.06);
});

test("an empty tally counts zero", async () => {
  const tally = new TokenTally(counter);
  tally.add("");
  expect(tally.length).toBe(0);
  expect(await tally.total()).toBe(0);
  tally.add("hi");
  expect(tally.length).toBe(2);
  expect(await tally.total()).toBe(1);
});

test("the count can leave out the newest text (what never reached the client)", async () => {
  const text = prose(5, 600_000);
  const tally = new TokenTally(counter);
  for (const p of pieces(text, 5)) {
    tally.add(p);
    await tally.caughtUp();
  }
  // Up to the window kept uncounted: everything a relay can hold untaken when it ends.
  const untakenAtMost = STREAM_HIGH_WATER_BYTES + 2 * MAX_READ_BYTES;
  expect(KEEP_CHARS).toBeGreaterThanOrEqual(untakenAtMost);
  for (const drop of [0, 1_000, 20_000, 25_650, untakenAtMost]) expect(await tally.total(drop)).toBe(countTextTokens(text.slice(0, text.length - drop)));
});

test("counted ahead (for the output cap), the count still leaves out the newest text exactly, and the bound holds", async () => {
  const text = prose(7, 400_000);
  const tally = new TokenTally(counter);
  tally.countAhead();
  let i = 0;
  for (const p of pieces(text, 7)) {
    tally.add(p);
    // Near a cap the meter asks for everything up to the last exact cut to be counted now.
    if (++i % 997 === 0) tally.countNow();
    await tally.caughtUp();
    if (i % 4999 === 0) expect(tally.bound()).toBeGreaterThanOrEqual(countTextTokens(text.slice(0, tally.length)));
  }
  expect(tally.bound()).toBeGreaterThanOrEqual(countTextTokens(text));
  for (const drop of [0, 1, 5_000, 40_000, KEEP_CHARS - 1]) expect(await tally.total(drop)).toBe(countTextTokens(text.slice(0, text.length - drop)));
});

test("the kept text is one buffer per tally, not the strings it was given", async () => {
  // Each piece handed over used to stay referenced for as long as it was in the window: across
  // many reads of a relay, so young collections promoted all of a stream's text to the old
  // generation. Now the window is copied into one buffer and no piece is kept.
  const { heapStats } = require("bun:jsc") as typeof import("bun:jsc");
  const strings = () => {
    Bun.gc(true);
    return (heapStats().objectTypeCounts as Record<string, number>).string ?? 0;
  };
  const before = strings();
  const tallies: TokenTally[] = [];
  for (let t = 0; t < 20; t++) {
    const tally = new TokenTally(counter);
    // 2000 pieces of 40 characters, ASCII then not: 80 Ki characters, all within the window.
    for (let i = 0; i < 2000; i++) tally.add(`${i === 1000 ? "naïve" : "piece"} ${t}-${i} `.padEnd(40, "x"));
    await tally.caughtUp();
    tallies.push(tally);
  }
  expect(strings() - before).toBeLessThan(2000);
  expect(await tallies[3]!.total()).toBe(countTextTokens(Array.from({ length: 2000 }, (_, i) => `${i === 1000 ? "naïve" : "piece"} 3-${i} `.padEnd(40, "x")).join("")));
});
