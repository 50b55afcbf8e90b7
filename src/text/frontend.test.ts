import { describe, expect, test } from "bun:test";
import { FIRST_CHUNK_TOKENS, PAUSES_MS, pauseAfter, planSpeech, tokenize, type SpeechChunk } from "./frontend";
import { KOKORO_VOCAB } from "./kokoro-vocab";
import { codePoints } from "../billing/prices";

describe("planSpeech", () => {
  test("sentences share a chunk, covering the whole input", () => {
    const text = "Good morning to all of you. Yes. No!";
    const chunks = planSpeech(text, "us", KOKORO_VOCAB);
    expect(chunks.map((c) => c.text)).toEqual(["Good morning to all of you. ", "Yes. No!"]);
    expect(chunks.reduce((n, c) => n + c.chars, 0)).toBe(codePoints(text));
    // A joined chunk is its text converted whole, not its sentences' ids laid end to end.
    expect(chunks[1]!.ids).toEqual(tokenize(chunks[1]!.phonemes, KOKORO_VOCAB));
    expect(chunks[1]!.phonemes).toContain(". ");
  });

  test("after the first chunk, each chunk is whole sentences, at most as many tokens as all the chunks before it (and 510)", () => {
    const sentence = "This sentence takes the tiny model a little while to speak aloud. ";
    const one = planSpeech(sentence, "us", KOKORO_VOCAB)[0]!.ids.length;
    const text = sentence.repeat(24);
    const chunks = planSpeech(text, "us", KOKORO_VOCAB);
    let before = chunks[0]!.ids.length;
    chunks.slice(1).forEach((c, i) => {
      const budget = Math.min(510, before);
      const n = c.text.length / sentence.length;
      expect(c.text).toBe(sentence.repeat(n));
      if (n > 1) expect(c.ids.length).toBeLessThanOrEqual(budget);
      // As many as fit: one more sentence would not (the last chunk takes what is left).
      if (i < chunks.length - 2) expect((n + 1) * (one + 1) - 1).toBeGreaterThan(budget);
      before += c.ids.length;
    });
    expect(chunks.map((c) => c.text.length / sentence.length)).toEqual([1, 1, 1, 2, 4, 7, 7, 1]);
    expect(chunks.map((c) => c.text).join("")).toBe(text);
    expect(chunks.slice(1).every((c) => c.pauseBeforeMs === PAUSES_MS.sentence)).toBe(true);
  });

  test("a paragraph ends a chunk, and a slice cut from a giant number joins nothing", () => {
    const paragraphs = planSpeech("Good morning to all of you. One.\n\nTwo. Three.", "us", KOKORO_VOCAB);
    expect(paragraphs.map((c) => c.text)).toEqual(["Good morning to all of you. ", "One.\n\n", "Two. Three."]);
    expect(paragraphs[2]!.pauseBeforeMs).toBe(PAUSES_MS.paragraph);
    const number = "7".repeat(600) + ". ";
    const giant = planSpeech("Hi. " + number + "Bye.", "us", KOKORO_VOCAB);
    expect(giant.at(-1)!.text).toBe("Bye.");
    for (const c of giant) expect(c.ids.length).toBeLessThanOrEqual(510);
    // Every token of the number is still spoken: its last slice (120 tokens) was not joined to "Bye.".
    const ids = (chunks: SpeechChunk[]) => chunks.filter((c) => c.phonemes === "").reduce((n, c) => n + c.ids.length, 0);
    expect(ids(giant)).toBe(ids(planSpeech(number, "us", KOKORO_VOCAB)));
    expect(giant.reduce((n, c) => n + c.chars, 0)).toBe(codePoints("Hi. " + number + "Bye."));
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
