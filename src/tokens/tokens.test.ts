/**
 * Token counting: exactly gpt-tokenizer's o200k count on normal text, close to it on long runs
 * of one kind of character (which are counted in parts, in linear time), and never an error.
 */
import { describe, expect, test } from "bun:test";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { countTextTokens, countTexts, LONG_PIECE, promptTokenBound, promptTokenCount } from "./tokens";

/** A deterministic generator, so a failure replays. */
function rng(seed: number) {
  return () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
}
const pick = <T,>(r: () => number, xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;

const WORDS = ["the", "quick", "brown", "fox", "Jumps", "over", "lazy", "dog's", "naïve", "café", "résumé", "Straße", "日本語", "テキスト", "中文", "Привет", "мир", "مرحبا", "😀", "x86_64", "e=mc²", "don't", "I'll", "HTTP/1.1", "..."];
const PUNCT = [" ", " ", " ", " ", ", ", ". ", "\n", "\n\n", "\t", "  ", "; ", "! ", "? ", " (", ") ", ": ", " - ", "/", " 42 ", " 3.14159 ", " 1,000,000 "];

function prose(seed: number, words: number): string {
  const r = rng(seed);
  let out = "";
  for (let i = 0; i < words; i++) out += pick(r, WORDS) + pick(r, PUNCT);
  return out;
}

const CODE = `export async function handler(req: Request): Promise<Response> {
    const { searchParams } = new URL(req.url);
    if (!searchParams.has("id")) return new Response("missing id", { status: 400 });
    for (let i = 0; i < 10; i++) {
        console.log(\`step \${i}: \${JSON.stringify({ a: [1, 2, 3], b: null })}\`);
    }
    return Response.json({ ok: true, items: [{ "name": "a" }, { "name": "b" }] });
}
`;

describe("normal text: exactly gpt-tokenizer's count", () => {
  test.each([
    ["empty", ""],
    ["short", "Hello, world!"],
    ["prose, 2 KB", prose(1, 300)],
    ["prose, 200 KB (several segments)", prose(2, 30_000)],
    ["code", CODE.repeat(40)],
    ["JSON", JSON.stringify({ messages: Array.from({ length: 500 }, (_, i) => ({ role: "user", content: `message ${i}`, n: i * 7.5 })) })],
    ["whitespace and newlines", "a\n\n\n  b\t\t c   \r\n d" .repeat(2_000)],
    ["a 64-character word (the longest counted whole)", "x".repeat(LONG_PIECE) + " end"],
  ])("%s", (_, text) => {
    expect(countTextTokens(text)).toBe(text ? countTokens(text) : 0);
  });
});

describe("long runs: counted in parts, close to the whole's BPE", () => {
  const r = rng(7);
  const random = (alphabet: string, n: number) => Array.from({ length: n }, () => pick(r, [...alphabet])).join("");
  test.each([
    ["one letter", "a".repeat(4_000)],
    ["one letter after a sentence", "Please repeat: " + "b".repeat(4_000) + " thanks"],
    ["random letters", random("abcdefghijklmnopqrstuvwxyz", 4_000)],
    ["random capitals and lower case", random("ABCDEFGHIJabcdefghij", 4_000)],
    ["punctuation", random("!@#$%^&*()_+-=[]{};:,.<>/?~|", 4_000)],
    ["spaces", " ".repeat(4_000) + "x"],
    ["newlines", "\n".repeat(4_000)],
    ["CJK without spaces", random("的一是不了人我在有他这为之大来以个中上们", 4_000)],
    ["emoji (surrogate pairs)", "😀🎉👍🏽".repeat(1_000)],
  ])("%s", (_, text) => {
    const exact = countTokens(text);
    const ours = countTextTokens(text);
    expect(Math.abs(ours - exact)).toBeLessThanOrEqual(Math.max(2, exact * 0.03));
  });

  // Before: 120,000 × "a" took 42 s and 8 MB did not finish in 300 s (quadratic BPE of one
  // pre-token). The test's timeout is the check; the figures live in test/bench.
  test("120,000 and 8,000,000 identical characters count in linear time", () => {
    expect(countTextTokens("a".repeat(120_000))).toBe(15_000);
    expect(countTextTokens("a".repeat(8_000_000))).toBe(1_000_000);
    const mixed = "z".repeat(1_000_000) + " " + "!".repeat(1_000_000) + " ".repeat(1_000_000) + "字".repeat(1_000_000);
    expect(countTextTokens(mixed)).toBeGreaterThan(0);
  }, 20_000);
});

describe("edge cases", () => {
  test("special-token markup in client text is text, not an error", () => {
    const text = "ignore <|endoftext|> and <|im_start|>system";
    expect(countTextTokens(text)).toBeGreaterThan(5);
    expect(countTextTokens(text.repeat(100))).toBe(countTokens(text.repeat(100), { disallowedSpecial: new Set() }));
    expect(promptTokenCount([{ role: "user", content: "<|endoftext|>" }])).toBeGreaterThan(8);
  });

  test("a rope built by concatenation counts the same as a flat string", () => {
    let rope = "";
    for (let i = 0; i < 5_000; i++) rope += i % 7 === 0 ? " word" : "x";
    expect(countTextTokens(rope)).toBe(countTextTokens(JSON.parse(JSON.stringify(rope))));
  });

  test("a limit stops counting early, above the limit; below it the count is exact", () => {
    const text = prose(3, 50_000);
    const full = countTextTokens(text);
    const stopped = countTextTokens(text, 1_000);
    expect(stopped).toBeGreaterThan(1_000);
    expect(stopped).toBeLessThan(full);
    expect(countTextTokens(text, full)).toBe(full);
    expect(countTexts([text, text], full + 10)).toBeGreaterThan(full + 10);
  });

  test("the hold's bound is never below the count", () => {
    const messages = [
      { role: "system", content: prose(4, 200) },
      { role: "user", content: [{ type: "text", text: "a".repeat(5_000) }, { type: "image_url", image_url: { url: "data:" } }] },
      { role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] },
    ];
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
    expect(promptTokenBound(messages, [tools])).toBeGreaterThanOrEqual(promptTokenCount(messages, [tools]));
  });
});
