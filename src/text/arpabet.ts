/**
 * ARPAbet (CMU Pronouncing Dictionary notation) to the IPA-based phoneme set Kokoro-82M was
 * trained on (misaki's): diphthongs are single capital letters (A=eɪ, I=aɪ, W=aʊ, Y=ɔɪ,
 * O=oʊ American, Q=əʊ British), stress marks ˈ ˌ stand before the stressed vowel, American
 * English flaps intervocalic t (ɾ) and keeps r after vowels; British English is non-rhotic and
 * marks long vowels with ː.
 */
import type { Dialect } from "./normalize";

const CONSONANTS: Record<string, string> = {
  B: "b", CH: "ʧ", D: "d", DH: "ð", F: "f", G: "ɡ", HH: "h", JH: "ʤ", K: "k", L: "l", M: "m", N: "n", NG: "ŋ",
  P: "p", R: "ɹ", S: "s", SH: "ʃ", T: "t", TH: "θ", V: "v", W: "w", Y: "j", Z: "z", ZH: "ʒ",
};

const US_VOWELS: Record<string, string> = {
  AA: "ɑ", AE: "æ", AH: "ʌ", AO: "ɔ", AW: "W", AY: "I", EH: "ɛ", ER: "ɜɹ", EY: "A", IH: "ɪ", IY: "i", OW: "O", OY: "Y", UH: "ʊ", UW: "u",
};
const GB_VOWELS: Record<string, string> = {
  AA: "ɑː", AE: "a", AH: "ʌ", AO: "ɔː", AW: "W", AY: "I", EH: "ɛ", ER: "ɜː", EY: "A", IH: "ɪ", IY: "iː", OW: "Q", OY: "Y", UH: "ʊ", UW: "uː",
};
/** British vowel + r with no vowel after it: the r is not pronounced and the vowel changes. */
const GB_R_COLOURED: Record<string, string> = { AA: "ɑː", AO: "ɔː", IH: "ɪə", IY: "ɪə", EH: "ɛə", EY: "ɛə", UH: "ʊə", UW: "ʊə", ER: "ɜː", AH: "ə" };

interface Phone {
  base: string;
  stress: number | null;
}

function parse(arpa: string[]): Phone[] {
  return arpa.map((p) => {
    const m = /^([A-Z]+)([012])?$/.exec(p);
    if (!m) return { base: "", stress: null };
    return { base: m[1]!, stress: m[2] === undefined ? null : Number(m[2]) };
  });
}

const isVowel = (p: Phone | undefined) => p !== undefined && p.stress !== null;

function mark(stress: number | null): string {
  return stress === 1 ? "ˈ" : stress === 2 ? "ˌ" : "";
}

/** One word's ARPAbet phones ("HH AH0 L OW1") to Kokoro phonemes ("həlˈO"). */
export function arpabetToPhonemes(arpa: string[], dialect: Dialect): string {
  const phones = parse(arpa).filter((p) => p.base !== "");
  const vowels = dialect === "gb" ? GB_VOWELS : US_VOWELS;
  let out = "";
  for (let i = 0; i < phones.length; i++) {
    const p = phones[i]!;
    const next = phones[i + 1];
    if (isVowel(p)) {
      const s = mark(p.stress);
      if (dialect === "gb" && next?.base === "R" && !isVowel(phones[i + 2])) {
        out += s + (p.stress === 0 && p.base === "ER" ? "ə" : (GB_R_COLOURED[p.base] ?? vowels[p.base] ?? ""));
        i++; // the r is silent
        continue;
      }
      // British r is said only before a vowel ("very", "century").
      const linkingR = dialect === "gb" && p.base === "ER" && isVowel(next) ? "ɹ" : "";
      if (p.stress === 0 && p.base === "AH") out += "ə";
      else if (p.stress === 0 && p.base === "ER") out += (dialect === "gb" ? "ə" : "əɹ") + linkingR;
      else out += s + (vowels[p.base] ?? "") + linkingR;
      continue;
    }
    if (p.base === "T" && dialect === "us" && i > 0) {
      const prev = phones[i - 1]!;
      // Flap: t between a vowel (or r) and an unstressed vowel, as in "water", "better", "party".
      if ((isVowel(prev) || (prev.base === "R" && isVowel(phones[i - 2]))) && isVowel(next) && next!.stress === 0) {
        out += "ɾ";
        continue;
      }
    }
    out += CONSONANTS[p.base] ?? "";
  }
  return out;
}
