import { describe, expect, test } from "bun:test";
import { planSpeech, tokenize } from "./frontend";
import { KOKORO_VOCAB } from "./kokoro-vocab";
import { codePoints } from "../billing/prices";

describe("planSpeech", () => {
  test("one chunk per sentence, covering the whole input", () => {
    const text = "First sentence. Second one! Third?";
    const chunks = planSpeech(text, "us", KOKORO_VOCAB);
    expect(chunks.map((c) => c.text)).toEqual(["First sentence. ", "Second one! ", "Third?"]);
    expect(chunks.reduce((n, c) => n + c.chars, 0)).toBe(codePoints(text));
  });

  test.each([
    ["a long sentence without stops", "and so it goes on ".repeat(200)],
    ["long clauses", "this clause is long enough, ".repeat(120)],
    ["a giant number", "7".repeat(3000)],
    ["emoji between sentences", "Hi. 😀😀😀 Bye."],
  ])("%s: every chunk fits 510 tokens and every character is attributed once", (_name, text) => {
    const chunks = planSpeech(text, "us", KOKORO_VOCAB);
    for (const c of chunks) expect(c.ids.length).toBeLessThanOrEqual(510);
    expect(chunks.reduce((n, c) => n + c.chars, 0)).toBe(codePoints(text));
  });

  test("text with nothing to say is one empty chunk that still carries its characters", () => {
    expect(planSpeech("😀 ∑", "us", KOKORO_VOCAB)).toEqual([{ text: "😀 ∑", chars: 3, phonemes: "", ids: [] }]);
  });

  test("tokenize drops symbols the vocabulary lacks", () => {
    expect(tokenize("ab§c", new Map([["a", 1], ["b", 2], ["c", 3]]))).toEqual([1, 2, 3]);
  });
});
