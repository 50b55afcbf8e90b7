/**
 * ARPAbet (CMU Pronouncing Dictionary notation) to the IPA-based phoneme set Kokoro-82M was
 * trained on (misaki's): diphthongs are single capital letters (A=eɪ, I=aɪ, W=aʊ, Y=ɔɪ,
 * O=oʊ American, Q=əʊ British), stress marks ˈ ˌ stand before the stressed vowel, American
 * English flaps intervocalic t and keeps r after vowels; British English is non-rhotic and
 * marks long vowels with ː. As in misaki (the front end Kokoro v1.0 was trained with): the flap
 * is written T, a syllabic l ᵊl ("little" lˈɪTᵊl), t before a syllabic n stays t with no schwa
 * ("button" bˈʌtn), the vowel of the -ed / -es endings ᵻ ("needed" nˈidᵻd), and a diphthong
 * before r takes a schwa ("hire" hˈIəɹ).
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
      const prev = phones[i - 1];
      const final = i === phones.length - 2 || (i === phones.length - 3 && ["Z", "D"].includes(phones[i + 2]!.base));
      // Syllabic l: an unstressed vowel + l ending the word (or before its -s / -d), after a consonant.
      if (p.stress === 0 && (p.base === "AH" || p.base === "IH") && next?.base === "L" && final && prev && !isVowel(prev)) {
        out += "ᵊ";
        continue;
      }
      // Syllabic n after t ("button", "certain", "written"): no schwa, and the t is not flapped.
      if (p.stress === 0 && (p.base === "AH" || p.base === "IH") && next?.base === "N" && i === phones.length - 2 && prev?.base === "T") continue;
      // The -ed after t/d and the -es after a sibilant: ᵻ.
      if (p.stress === 0 && (p.base === "IH" || p.base === "AH") && i === phones.length - 2 && prev) {
        if ((next?.base === "D" && (prev.base === "T" || prev.base === "D")) || (next?.base === "Z" && ["S", "Z", "SH", "ZH", "CH", "JH"].includes(prev.base))) {
          out += "ᵻ";
          continue;
        }
      }
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
      // A diphthong before an r that ends the syllable takes a schwa ("admires" ədmˈIəɹz).
      if (dialect === "us" && (p.base === "AY" || p.base === "AW") && next?.base === "R" && !isVowel(phones[i + 2])) out += "ə";
      continue;
    }
    if (p.base === "T" && dialect === "us" && i > 0) {
      const prev = phones[i - 1]!;
      const syllabicN = (next?.base === "AH" || next?.base === "IH") && next.stress === 0 && phones[i + 2]?.base === "N" && i + 2 === phones.length - 1;
      // Flap: t between a vowel (or r) and an unstressed vowel, as in "water", "better", "party".
      if (!syllabicN && (isVowel(prev) || (prev.base === "R" && isVowel(phones[i - 2]))) && isVowel(next) && next!.stress === 0) {
        out += "T";
        continue;
      }
    }
    out += CONSONANTS[p.base] ?? "";
  }
  return out;
}
