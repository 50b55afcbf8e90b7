/**
 * Roman numerals in running text, read the way people read them: regnal numbers as ordinals
 * ("Henry VIII" → "Henry the eighth"), wars and numbered things as cardinals ("World War II" →
 * "World War two", "Chapter IV" → "Chapter four"). Only canonical numerals up to 39 (I, V, X),
 * and only after a capitalised name or a counting word, so "I", "MIX" or "CD" stay words.
 */
import { cardinal, ordinal } from "./numbers";

const NUMERAL = "(?:X{0,3}(?:IX|IV|VI{0,3}|I{1,3})|X{1,3})";
const VALUES: Record<string, number> = { I: 1, V: 5, X: 10 };
const WHOLE_NUMERAL = new RegExp(`^${NUMERAL}$`);

export function romanValue(s: string): number | null {
  if (!WHOLE_NUMERAL.test(s)) return null;
  let total = 0;
  for (let i = 0; i < s.length; i++) {
    const v = VALUES[s[i]!]!;
    const next = VALUES[s[i + 1] ?? ""] ?? 0;
    total += v < next ? -v : v;
  }
  return total;
}

/** Words after which a numeral counts things: read as a cardinal. */
const COUNTING = "World War|War|Chapter|Part|Volume|Vol\\.|Book|Act|Scene|Phase|Type|Class|Level|Title|Section|Article|Episode|Season|Super Bowl|Apollo|Vatican|Schedule|Stage|Grade|Category|Appendix|Tier";
/** Names that take a single-letter numeral too ("Henry I", "Leo X", "George V"). */
const MONARCHS = "Henry|Edward|George|William|Richard|Charles|James|John|Louis|Elizabeth|Mary|Anne|Victoria|Philip|Peter|Frederick|Napoleon|Alexander|Constantine|Pius|Leo|Gregory|Benedict|Paul|Innocent|Clement|Urban|Boniface|Ferdinand|Isabella|Catherine|Ivan|Nicholas|Francis|Alfonso|Juan|Carlos|Felipe|Gustav|Olaf|Harald|Haakon|Christian|Ludwig|Otto|Rudolf|Stephen|Ramesses|Thutmose|Amenhotep|Ptolemy|Antiochus|Darius|Xerxes|Artaxerxes";

// Built once: readRomanNumerals runs for every piece of text the speech front end converts.
// (String.prototype.replace starts a global pattern from the beginning every time.)
const AFTER_COUNTING_WORD = new RegExp(`\\b(${COUNTING})\\s+(${NUMERAL})\\b(?!['’]?[a-z])`, "g");
const AFTER_MONARCH = new RegExp(`\\b(${MONARCHS})\\s+(${NUMERAL})\\b(['’]s)?(?![a-z])`, "g");
const AFTER_NAME = new RegExp(`\\b([A-Z][a-z]+)\\s+(${NUMERAL})\\b(['’]s)?(?![a-z])`, "g");

export function readRomanNumerals(text: string): string {
  // Counting words first ("World War II", "Chapter IV", "Type 2" is left to the number rules).
  let t = text.replace(AFTER_COUNTING_WORD, (all, word: string, num: string) => {
    const v = romanValue(num);
    return v === null ? all : `${word} ${cardinal(v)}`;
  });
  // Regnal: a monarch's name and any numeral, or any capitalised name and a numeral of two or more letters.
  const regnal = (all: string, name: string, num: string, poss = "") => {
    const v = romanValue(num);
    return v === null ? all : `${name} the ${ordinal(v)}${poss}`;
  };
  t = t.replace(AFTER_MONARCH, (all, name, num, poss) => regnal(all, name, num, poss ?? ""));
  t = t.replace(AFTER_NAME, (all, name: string, num: string, poss) =>
    num.length >= 2 ? regnal(all, name, num, poss ?? "") : all,
  );
  return t;
}
