/**
 * Token counting throughput (src/tokens/tokens.ts) on normal text and on the texts that were
 * quadratic before (one pre-token of 120,000 or 8,000,000 identical characters: 42 s and no
 * answer in 300 s), plus hostile runs of random characters (counted cold: every part is new to
 * the tokenizer's cache, which a second run would hit). Pure CPU on this thread; the server runs
 * the same code in a worker thread.
 *
 *   ./node_modules/.bin/bun test/bench/tokens.bench.ts
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { countTextTokens } from "../../src/tokens/tokens";

let seed = 7;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const random = (alphabet: string, n: number) => {
  const chars = [...alphabet];
  let s = "";
  for (let i = 0; i < n; i++) s += chars[Math.floor(rnd() * chars.length)];
  return JSON.parse(JSON.stringify(s)) as string; // flat, as a parsed request body's text is
};
const PROSE = "The quick brown fox jumps over the lazy dog; then, 42 times, it naps. ".repeat(15_000);

function bench(name: string, text: string, runs = 3): void {
  countTextTokens(text.slice(0, 10_000)); // warm-up
  let best = Infinity;
  let tokens = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    tokens = countTextTokens(text);
    best = Math.min(best, performance.now() - t0);
  }
  const mb = Buffer.byteLength(text) / 1e6;
  console.log(`${name.padEnd(40)} ${mb.toFixed(2).padStart(6)} MB  ${best.toFixed(1).padStart(8)} ms  ${(mb / (best / 1000)).toFixed(1).padStart(6)} MB/s  ${tokens} tokens`);
}

bench("prose (exactly gpt-tokenizer's count)", PROSE);
console.log(`${"  gpt-tokenizer countTokens, same prose".padEnd(40)} ${(() => {
  const t0 = performance.now();
  countTokens(PROSE);
  return `${(performance.now() - t0).toFixed(1)} ms`;
})()}`);
bench("120,000 x 'a'", "a".repeat(120_000));
bench("8,000,000 x 'a'", "a".repeat(8_000_000), 1);
bench("1,000,000 random letters", random("abcdefghijklmnopqrstuvwxyz", 1_000_000), 1);
bench("1,000,000 random CJK", random("的一是不了人我在有他这为之大来以个中上们", 1_000_000), 1);
bench("1,000,000 random unicode spaces", random(" \t\u00a0\u3000\u2003", 1_000_000), 1);
bench("4,000,000 x ' !'", " !".repeat(2_000_000), 1);
