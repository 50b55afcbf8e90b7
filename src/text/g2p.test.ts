import { describe, expect, test } from "bun:test";
import { phonemize, wordToArpabet, wordToPhonemes } from "./g2p";
import { arpabetToPhonemes } from "./arpabet";
import { letterToSound } from "./lts";
import { KOKORO_VOCAB } from "./kokoro-vocab";

describe("grapheme to phoneme", () => {
  test.each([
    ["hello", "us", "həlˈO"],
    ["hello", "gb", "həlˈQ"],
    ["water", "us", "wˈɔTəɹ"],
    ["water", "gb", "wˈɔːtə"],
    ["car", "us", "kˈɑɹ"],
    ["car", "gb", "kˈɑː"],
    ["bird", "gb", "bˈɜːd"],
    ["cat", "gb", "kˈat"],
    ["thinking", "us", "θˈɪŋkɪŋ"],
    ["judge", "us", "ʤˈʌʤ"],
  ] as const)("%s (%s) → %s", (word, dialect, ph) => expect(wordToPhonemes(word, dialect)).toBe(ph));

  test.each([
    ["little", "lˈɪTᵊl"],
    ["people", "pˈipᵊl"],
    ["tables", "tˈAbᵊlz"],
    ["button", "bˈʌtn"],
    ["certain", "sˈɜɹtn"],
    ["needed", "nˈidᵻd"],
    ["wishes", "wˈɪʃᵻz"],
    ["city", "sˈɪTi"],
    ["fire", "fˈIəɹ"],
  ] as const)("misaki's conventions: %s → %s", (word, ph) => expect(wordToPhonemes(word, "us")).toBe(ph));

  test("ARPAbet mapping: diphthongs are single letters, stress precedes the vowel", () => {
    expect(arpabetToPhonemes("F AY1 V".split(" "), "us")).toBe("fˈIv");
    expect(arpabetToPhonemes("B OY1".split(" "), "us")).toBe("bˈY");
    expect(arpabetToPhonemes("HH AW1 S".split(" "), "us")).toBe("hˈWs");
    expect(arpabetToPhonemes("S EY1".split(" "), "us")).toBe("sˈA");
    expect(arpabetToPhonemes("V EH1 R IY0".split(" "), "gb")).toBe("vˈɛɹiː");
  });

  test("unknown words: suffixes on known stems, then letter-to-sound; abbreviations spelled", () => {
    expect(wordToArpabet("switchyards")).toEqual(letterToSound("switchyards"));
    expect(wordToArpabet("podcasted")).toEqual("P AO1 D K AE2 S T IH0 D".split(" "));
    expect(wordToArpabet("blogged")).toEqual("B L AO1 G D".split(" "));
    expect(wordToArpabet("chatbots").slice(-1)).toEqual(["S"]);
    expect(letterToSound("blorf").length).toBeGreaterThan(3);
    expect(letterToSound("make")).toEqual(["M", "EY1", "K"]);
    expect(wordToArpabet("XKCD")).toEqual("EH1 K S K EY1 S IY1 D IY1".split(" "));
  });

  test("punctuation is kept, unknown characters dropped, every symbol is in Kokoro's vocabulary", () => {
    const ph = phonemize("Hello, world! (Yes) “quoted” — 日本 😀 ∑ naïve café; ok?", "us");
    expect(ph).toContain(",");
    expect(ph).toContain("!");
    expect(ph).not.toMatch(/[日本😀∑]/u);
    for (const dialect of ["us", "gb"] as const) {
      const all = phonemize("The quick brown fox jumps over the lazy dog while zebras vex jolly quails; thirty birds heard music, pleasure and ideas.", dialect);
      for (const ch of all) expect(KOKORO_VOCAB.has(ch)).toBe(true);
    }
  });

  test("garbage never throws", () => {
    for (const s of ["", "   ", "'''", "a'b'c'd", "Z".repeat(300), "\u0301\u0301", "--", "ñññ"]) expect(typeof phonemize(s, "us")).toBe("string");
  });
});

describe("words named like an object's own properties", () => {
  // Looked up in plain objects (the dictionary, the reduced forms), these once came out as the
  // source text of Object's methods ("function Object() { [native code] }") read as phonemes.
  test.each(["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"])("%s is spelled out, not a function's source", (word) => {
    for (const dialect of ["us", "gb"] as const) {
      const ph = phonemize(`the ${word} is here`, dialect);
      expect(ph).not.toMatch(/function|native|object|\[|\{/i);
      expect(wordToPhonemes(word, dialect)).not.toMatch(/function|native|object|\[|\{/i);
    }
  });
});

describe("function words", () => {
  test.each([
    ["the apple", "us", "ði ˈæpᵊl"],
    ["the car", "us", "ðə kˈɑɹ"],
    ["a car and a bus", "us", "ɐ kˈɑɹ ænd ɐ bˈʌs"],
    ["go to work for me", "gb", "ɡˈQ tə wˈɜːk fə mˈiː"],
    ["it was in", "us", "ˈɪt wʌz ɪn"],
  ] as const)("%s (%s)", (text, dialect, ph) => expect(phonemize(text, dialect)).toBe(ph));
});
