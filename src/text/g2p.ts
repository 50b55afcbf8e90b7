/**
 * Grapheme-to-phoneme conversion for American and British English into Kokoro's phoneme
 * vocabulary. Words come from the CMU Pronouncing Dictionary (npm `cmu-pronouncing-dictionary`,
 * ISC; the dictionary data is BSD-licensed), mapped from ARPAbet to misaki-style IPA; unknown
 * words try English suffixes on a known stem, then letter-to-sound rules; capitalised
 * abbreviations the dictionary lacks are spelled out. Characters that are neither letters nor
 * speakable punctuation are dropped. Input is normalised text (see normalize.ts).
 */
import { dictionary } from "cmu-pronouncing-dictionary";
import { arpabetToPhonemes } from "./arpabet";
import { letterToSound } from "./lts";
import type { Dialect } from "./normalize";

const LETTERS: Record<string, string> = {
  a: "EY1", b: "B IY1", c: "S IY1", d: "D IY1", e: "IY1", f: "EH1 F", g: "JH IY1", h: "EY1 CH", i: "AY1",
  j: "JH EY1", k: "K EY1", l: "EH1 L", m: "EH1 M", n: "EH1 N", o: "OW1", p: "P IY1", q: "K Y UW1", r: "AA1 R",
  s: "EH1 S", t: "T IY1", u: "Y UW1", v: "V IY1", w: "D AH1 B AH0 L Y UW0", x: "EH1 K S", y: "W AY1", z: "Z IY1",
};

/** Punctuation the model has tokens for; it shapes prosody, so it is kept. */
const PUNCTUATION = new Set([";", ":", ",", ".", "!", "?", "—", "…", '"', "(", ")", "“", "”"]);

const dict = dictionary as Record<string, string>;

/** A table's own entry, never one of Object.prototype's ("constructor", "__proto__"). */
const own = <T>(table: Record<string, T>, key: string): T | undefined => (Object.hasOwn(table, key) ? table[key] : undefined);

function lookup(word: string): string[] | null {
  const e = own(dict, word);
  return e ? e.split(" ") : null;
}

function endsVoiceless(arpa: string[]): boolean {
  return ["P", "T", "K", "F", "TH"].includes(arpa[arpa.length - 1] ?? "");
}
function endsSibilant(arpa: string[]): boolean {
  return ["S", "Z", "SH", "ZH", "CH", "JH"].includes(arpa[arpa.length - 1] ?? "");
}

/** A known stem plus a regular English suffix ("switchyards", "tokenized", "batching"). */
function withSuffix(word: string): string[] | null {
  const tries: [RegExp, (stem: string[]) => string[]][] = [
    [/'?s$/, (s) => [...s, ...(endsSibilant(s) ? ["IH0", "Z"] : endsVoiceless(s) ? ["S"] : ["Z"])]],
    [/es$/, (s) => [...s, "IH0", "Z"]],
    [/ed$/, (s) => [...s, ...(["T", "D"].includes(s[s.length - 1] ?? "") ? ["IH0", "D"] : endsVoiceless(s) ? ["T"] : ["D"])]],
    [/d$/, (s) => [...s, ...(endsVoiceless(s) ? ["T"] : ["D"])]],
    [/ing$/, (s) => [...s, "IH0", "NG"]],
    [/ly$/, (s) => [...s, "L", "IY0"]],
    [/er$/, (s) => [...s, "ER0"]],
    [/ers$/, (s) => [...s, "ER0", "Z"]],
  ];
  for (const [re, add] of tries) {
    if (!re.test(word)) continue;
    const stem = word.replace(re, "");
    if (stem.length < 2) continue;
    const undoubled = /([b-df-hj-np-tv-z])\1$/.test(stem) ? stem.slice(0, -1) : null; // "blogged" → "blog"
    const found = lookup(stem) ?? (stem.endsWith("i") ? lookup(stem.slice(0, -1) + "y") : null) ?? lookup(stem + "e") ?? (undoubled ? lookup(undoubled) : null);
    if (found) return add(found);
  }
  return null;
}

/** ARPAbet for one word as written (case matters for abbreviations). */
export function wordToArpabet(written: string): string[] {
  const lower = written.toLowerCase();
  const known = lookup(lower);
  if (known) return known;
  const isAbbreviation = written.length <= 5 && /^[A-Z]+s?$/.test(written) && /[A-Z]{2}/.test(written);
  if (isAbbreviation) return [...written.replace(/s$/, "")].flatMap((c) => LETTERS[c.toLowerCase()]!.split(" ")).concat(written.endsWith("s") ? ["Z"] : []);
  const noApostrophe = lower.replace(/'/g, "");
  return lookup(noApostrophe) ?? withSuffix(lower) ?? letterToSound(noApostrophe);
}

export function wordToPhonemes(written: string, dialect: Dialect): string {
  return arpabetToPhonemes(wordToArpabet(written), dialect);
}

/**
 * Closed-class words are said unstressed in running speech ("to" is tə, not tˈu). Articles get
 * the forms the model was trained on: "a" → ɐ, "the" → ðə (ði before a vowel sound).
 */
const UNSTRESSED = new Set([
  "an", "and", "or", "nor", "but", "to", "of", "for", "in", "on", "at", "by", "with", "from", "as", "than",
  "is", "are", "was", "were", "be", "been", "am", "has", "have", "had", "do", "does", "can", "could", "will",
  "would", "shall", "should", "may", "might", "must", "his", "her", "its", "our", "your", "their", "them", "us",
]);
/** The forms misaki gives these words in running American speech (stress aside). */
const REDUCED: Record<string, string> = { a: "ɐ", to: "tə", of: "ʌv", for: "fɔɹ", from: "fɹʌm", and: "ænd", an: "ɐn", was: "wʌz", on: "ɔn" };
const GB_REDUCED: Record<string, string> = { for: "fə", on: "ɒn", was: "wɒz", of: "ɒv", from: "fɹɒm" };
const STARTS_WITH_VOWEL = /^[ˈˌ]?[aeiouæɑɐɒɔəɛɜɪʊʌAIOWYQᵻ]/;

function functionWord(lower: string, phonemes: string, nextPhonemes: string | null, dialect: Dialect): string {
  if (lower === "the") return nextPhonemes && STARTS_WITH_VOWEL.test(nextPhonemes) ? (dialect === "gb" ? "ðiː" : "ði") : "ðə";
  const reduced = own(REDUCED, lower);
  if (reduced) return dialect === "gb" ? (own(GB_REDUCED, lower) ?? reduced) : reduced;
  return UNSTRESSED.has(lower) ? phonemes.replace(/[ˈˌ]/g, "") : phonemes;
}

/** Latin letters with their accents removed ("café" → "cafe"); other scripts are dropped later. */
function foldAccents(text: string): string {
  return text.normalize("NFD").replace(/\p{M}+/gu, "").replace(/[æ]/g, "ae").replace(/[œ]/g, "oe").replace(/[ß]/g, "ss");
}

/**
 * A capital "A" standing alone is the letter ("plan A", "A M", "gate A four"), except as the
 * first word of a sentence before an ordinary word ("A cat sat").
 */
function isLetterA(tokens: readonly string[], i: number): boolean {
  if (tokens[i] !== "A") return false;
  const prev = tokens[i - 1];
  const next = tokens[i + 1] ?? "";
  const startsSentence = prev === undefined || /^[.!?…:"“(]$/.test(prev);
  return !(startsSentence && /^[A-Za-z]{2,}|^[a-z]/.test(next));
}

/** Normalised text to a phoneme string: words separated by spaces, punctuation kept. */
export function phonemize(text: string, dialect: Dialect): string {
  const tokens = foldAccents(text).match(/[A-Za-z]+(?:'[A-Za-z]+)*|\S/g) ?? [];
  // Words first (so "the" can look at the next word), then assembly with punctuation.
  const letterA = tokens.map((_t, i) => isLetterA(tokens, i));
  const spoken = tokens.map((tok, i) => (letterA[i] ? arpabetToPhonemes(LETTERS.a!.split(" "), dialect) : /^[A-Za-z]/.test(tok) ? wordToPhonemes(tok, dialect) : null));
  let out = "";
  tokens.forEach((tok, i) => {
    if (PUNCTUATION.has(tok)) {
      // Opening marks take a space before them; closing ones attach to the word before.
      if (tok === "(" || tok === "“") out += (out && !out.endsWith(" ") ? " " : "") + tok;
      else out = out.replace(/ $/, "") + tok + " ";
      return;
    }
    const own = spoken[i];
    if (!own) return; // unknown characters are dropped
    const next = spoken.slice(i + 1).find((p) => p) ?? null;
    const ph = letterA[i] ? own : functionWord(tok.toLowerCase(), own, /^[A-Za-z]/.test(tokens[i + 1] ?? "") ? next : null, dialect);
    if (out && !out.endsWith(" ") && !out.endsWith("(") && !out.endsWith("“")) out += " ";
    out += ph;
  });
  return out.trim();
}
