import { describe, expect, test } from "bun:test";
import { FIRST_CHUNK_TOKENS, PAUSES_MS, pauseAfter, planSpeech, tokenize } from "./frontend";
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
    expect(planSpeech("😀 ∑", "us", KOKORO_VOCAB)).toEqual([{ text: "😀 ∑", chars: 3, phonemes: "", ids: [], pauseBeforeMs: 0 }]);
  });

  test("the first chunk is short: its first clause, or words up to the first-chunk limit", () => {
    const clauses = "When the ferry finally came in, forty-two passengers stepped onto the pier and walked toward the old fish market by the harbour. Then it rained.";
    const a = planSpeech(clauses, "us", KOKORO_VOCAB);
    expect(a[0]!.text).toBe("When the ferry finally came in, ");
    expect(a[1]!.text).toBe("forty-two passengers stepped onto the pier and walked toward the old fish market by the harbour. ");
    expect(a[2]!.text).toBe("Then it rained.");
    const words = "the long road went on and on past the fields and the farms and the rivers and the hills and the little towns that nobody remembers anymore at all until the very end.";
    const b = planSpeech(words, "us", KOKORO_VOCAB);
    expect(b[0]!.ids.length).toBeLessThanOrEqual(FIRST_CHUNK_TOKENS);
    expect(b[0]!.text.endsWith(" ")).toBe(true);
    expect(b.map((c) => c.text).join("")).toBe(words);
    // A short first sentence is left whole.
    expect(planSpeech("Hello there. Bye.", "us", KOKORO_VOCAB)[0]!.text).toBe("Hello there. ");
  });

  test.each([
    ["Hello there. ", PAUSES_MS.sentence],
    ["Really?\" ", PAUSES_MS.sentence],
    ["Wow! ", PAUSES_MS.sentence],
    ["End of a paragraph.\n\n", PAUSES_MS.paragraph],
    ["first clause, ", PAUSES_MS.clause],
    ["a list; ", PAUSES_MS.clause],
    ["cut between words ", PAUSES_MS.word],
  ])("pause after %j", (text, ms) => expect(pauseAfter(text)).toBe(ms));

  test("each chunk carries the pause its predecessor's punctuation calls for; the first has none", () => {
    const chunks = planSpeech("One. Two, and then some words that make this clause long enough to be cut somewhere.\n\nThree!", "us", KOKORO_VOCAB, 510, 8);
    expect(chunks[0]!.pauseBeforeMs).toBe(0);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.pauseBeforeMs).toBe(pauseAfter(chunks[i - 1]!.text));
    expect(chunks.at(-1)!.pauseBeforeMs).toBe(PAUSES_MS.paragraph);
  });

  test("tokenize drops symbols the vocabulary lacks", () => {
    expect(tokenize("ab§c", new Map([["a", 1], ["b", 2], ["c", 3]]))).toEqual([1, 2, 3]);
  });
});
