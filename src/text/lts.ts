/**
 * Letter-to-sound rules for words the pronouncing dictionary does not know (names, new words,
 * typos). A small ordered rule table in ARPAbet, longest match first, with the usual English
 * context rules (magic e, soft c/g, silent letters). It aims to be intelligible, not perfect:
 * dictionary words never come here.
 */

type Rule = [grapheme: string, phones: string, when?: (word: string, at: number, after: number) => boolean];

const VOWELS = "aeiouy";
const isV = (c: string | undefined) => c !== undefined && VOWELS.includes(c);
const atStart = (_w: string, at: number) => at === 0;
const atEnd = (w: string, _at: number, after: number) => after >= w.length;
const beforeFrontVowel = (w: string, _at: number, after: number) => "eiy".includes(w[after] ?? "_");
/** Vowel + one consonant + final e ("make", "time", "hope", "cute"). */
const magicE = (w: string, _at: number, after: number) =>
  after === w.length - 2 && !isV(w[after]) && w[after + 1] === "e" && w.length > 3;

const RULES: Rule[] = [
  ["tion", "SH AH0 N"], ["sion", "ZH AH0 N"], ["ture", "CH ER0"], ["ough", "AO1"], ["augh", "AO1"],
  ["igh", "AY1"], ["tch", "CH"], ["sch", "S K"], ["dge", "JH"],
  ["eau", "OW1"], ["ch", "CH"], ["sh", "SH"], ["th", "TH"], ["ph", "F"], ["wh", "W"], ["ck", "K"], ["ng", "NG"],
  ["qu", "K W"], ["gh", "G", atStart], ["gh", ""], ["kn", "N", atStart], ["wr", "R", atStart], ["ps", "S", atStart],
  ["ee", "IY1"], ["ea", "IY1"], ["oo", "UW1"], ["ou", "AW1"], ["ow", "OW1", atEnd], ["ow", "AW1"],
  ["ai", "EY1"], ["ay", "EY1"], ["oa", "OW1"], ["oi", "OY1"], ["oy", "OY1"], ["au", "AO1"], ["aw", "AO1"],
  ["ie", "IY1"], ["ei", "EY1"], ["ey", "IY0", atEnd], ["ey", "EY1"], ["ue", "UW1"], ["ew", "UW1"],
  ["ar", "AA1 R"], ["or", "AO1 R"], ["er", "ER0"], ["ir", "ER1"], ["ur", "ER1"], ["yr", "ER1"],
  ["a", "EY1", magicE], ["e", "IY1", magicE], ["i", "AY1", magicE], ["o", "OW1", magicE], ["u", "UW1", magicE],
  ["c", "S", beforeFrontVowel], ["g", "JH", beforeFrontVowel], ["x", "Z", atStart], ["x", "K S"],
  ["y", "Y", atStart], ["y", "IY0", atEnd], ["y", "IH1"], ["j", "JH"], ["c", "K"], ["q", "K"],
  ["a", "AE1"], ["e", "EH1"], ["i", "IH1"], ["o", "AA1"], ["u", "AH1"],
  ["b", "B"], ["d", "D"], ["f", "F"], ["g", "G"], ["h", "HH"], ["k", "K"], ["l", "L"], ["m", "M"], ["n", "N"],
  ["p", "P"], ["r", "R"], ["s", "S"], ["t", "T"], ["v", "V"], ["w", "W"], ["z", "Z"],
];

/** ARPAbet phones for a lower-case word of a–z letters. */
export function letterToSound(word: string): string[] {
  const w = word.toLowerCase().replace(/[^a-z]/g, "");
  const phones: string[] = [];
  let i = 0;
  while (i < w.length) {
    // A final e after a consonant is silent ("make", "time"); a doubled consonant is said once.
    if (w[i] === "e" && i === w.length - 1 && i > 1 && !isV(w[i - 1])) break;
    if (i > 0 && w[i] === w[i - 1] && !isV(w[i])) {
      i++;
      continue;
    }
    const rule = RULES.find(([g, , when]) => w.startsWith(g, i) && (!when || when(w, i, i + g.length)));
    if (!rule) {
      i++;
      continue;
    }
    if (rule[1]) phones.push(...rule[1].split(" "));
    i += rule[0].length;
  }
  return stressFirstVowel(phones);
}

/** Keeps one primary stress (on the first stressed-looking vowel); the rest are unstressed. */
function stressFirstVowel(phones: string[]): string[] {
  let seen = false;
  return phones.map((p) => {
    const m = /^([A-Z]+)([012])$/.exec(p);
    if (!m) return p;
    if (m[2] === "1" && !seen) {
      seen = true;
      return p;
    }
    if (m[1] === "AH" || m[1] === "ER" || m[1] === "IY") return `${m[1]}0`;
    return m[2] === "1" ? `${m[1]}2` : p;
  });
}
