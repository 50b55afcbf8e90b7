/**
 * Text normalisation for speech: what a reader says for numbers, dates, times, phone numbers,
 * currency, units, Roman numerals, codes, symbols, abbreviations and addresses. Runs before
 * grapheme-to-phoneme conversion; the output is plain words and punctuation. Pure string
 * rewriting in a fixed order (addresses and phone numbers before anything reads their digits);
 * never throws on odd input. The table in normalize.test.ts is the specification.
 */
import { readAddresses, readPhoneNumbers } from "./addresses";
import { cardinal, decimal, digitByDigit, ordinal, year } from "./numbers";
import { readRomanNumerals } from "./roman";

export type Dialect = "us" | "gb";

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const MONTH_ABBR: Record<string, number> = {
  jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, sept: 9, oct: 10, nov: 11, dec: 12,
};
/** A month; an abbreviation's dot is taken only before a number ("Jan. 5"), never a sentence's full stop. */
const MONTH_RE = "(January|February|March|April|May|June|July|August|September|October|November|December|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)(?:\\.(?=\\s*\\d))?)";

function monthIndex(name: string): number {
  const key = name.replace(/\.$/, "").toLowerCase();
  return MONTH_ABBR[key.slice(0, key === "sept" ? 4 : 3)] ?? 0;
}

/** A full stop that also ended the sentence is kept when a rule swallows an abbreviation's dot. */
const endsSentence = (rest: string) => /^(\s*$|\s+["“]?[A-Z])/.test(rest);

/** Abbreviations that always expand the same way (case-sensitive, with their dot). */
const ABBREVIATIONS: [RegExp, string][] = [
  [/\bMr\./g, "mister"], [/\bMrs\./g, "missus"], [/\bMs\./g, "miz"], [/\bDr\.(?=\s+[A-Z])/g, "doctor"], [/\bDr\./g, "drive"],
  [/\bProf\./g, "professor"], [/\bSt\.(?=\s+[A-Z])/g, "saint"], [/\bSt\./g, "street"], [/\bMt\./g, "mount"],
  [/\bAve\./g, "avenue"], [/\bBlvd\./g, "boulevard"], [/\bRd\./g, "road"], [/\bJr\./g, "junior"], [/\bSr\./g, "senior"],
  [/\bGen\./g, "general"], [/\bCapt\./g, "captain"], [/\bLt\./g, "lieutenant"], [/\bSgt\./g, "sergeant"], [/\bCol\./g, "colonel"],
  [/\bGov\./g, "governor"], [/\bSen\./g, "senator"], [/\bRep\./g, "representative"], [/\bPres\./g, "president"],
  [/\bInc\./g, "incorporated"], [/\bLtd\./g, "limited"], [/\bCorp\./g, "corporation"], [/\bCo\./g, "company"],
  [/\bvs\.?(?=\s)/g, "versus"], [/\betc\./g, "et cetera"], [/\be\.g\.,?/gi, "for example"], [/\bi\.e\.,?/gi, "that is"],
  [/\bPh\.D\./g, "P H D"], [/\bapprox\./gi, "approximately"], [/\bNo\.(?=\s*\d)/g, "number"], [/\bnos?\.(?=\s*\d)/g, "number"], [/\bDept\./g, "department"],
  [/\bFig\.(?=\s*\d)/g, "figure"], [/\bVol\.(?=\s*\d)/g, "volume"], [/\bpp?\.(?=\s*\d)/g, "page"], [/\bmin\.(?=\s)/g, "minutes"],
];

const UNITS: Record<string, [string, string]> = {
  km: ["kilometer", "kilometers"], m: ["meter", "meters"], cm: ["centimeter", "centimeters"], mm: ["millimeter", "millimeters"],
  kg: ["kilogram", "kilograms"], g: ["gram", "grams"], mg: ["milligram", "milligrams"], lb: ["pound", "pounds"], lbs: ["pound", "pounds"],
  oz: ["ounce", "ounces"], mi: ["mile", "miles"], ft: ["foot", "feet"], yd: ["yard", "yards"], mph: ["mile per hour", "miles per hour"],
  "km/h": ["kilometer per hour", "kilometers per hour"], kph: ["kilometer per hour", "kilometers per hour"],
  kb: ["kilobyte", "kilobytes"], mb: ["megabyte", "megabytes"], gb: ["gigabyte", "gigabytes"], tb: ["terabyte", "terabytes"],
  ms: ["millisecond", "milliseconds"], s: ["second", "seconds"], sec: ["second", "seconds"], min: ["minute", "minutes"], h: ["hour", "hours"], hr: ["hour", "hours"], hrs: ["hour", "hours"],
  hz: ["hertz", "hertz"], khz: ["kilohertz", "kilohertz"], mhz: ["megahertz", "megahertz"], ghz: ["gigahertz", "gigahertz"],
  w: ["watt", "watts"], kw: ["kilowatt", "kilowatts"], kwh: ["kilowatt hour", "kilowatt hours"], v: ["volt", "volts"],
  l: ["liter", "liters"], ml: ["milliliter", "milliliters"], "°c": ["degree Celsius", "degrees Celsius"], "°f": ["degree Fahrenheit", "degrees Fahrenheit"],
};
/** One-letter units are read only in these spellings ("5 m", "60 W"); "5 A" or "3 d" are left alone. */
const ONE_LETTER_UNITS = /^[mgshlWV]$/;

const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ["dollar", "dollars", "cent", "cents"],
  "£": ["pound", "pounds", "penny", "pence"],
  "€": ["euro", "euros", "cent", "cents"],
  "¥": ["yen", "yen", "sen", "sen"],
  "₹": ["rupee", "rupees", "paisa", "paise"],
};
const SCALE_WORDS: Record<string, string> = { k: "thousand", K: "thousand", thousand: "thousand", m: "million", M: "million", million: "million", mn: "million", b: "billion", B: "billion", bn: "billion", billion: "billion", trillion: "trillion", T: "trillion" };

const SYMBOLS: [RegExp, string][] = [
  [/&/g, " and "], [/\+/g, " plus "], [/=/g, " equals "], [/@/g, " at "], [/#(?=\d)/g, "number "],
  [/°/g, " degrees "], [/×/g, " times "], [/\//g, " slash "], [/[_*~^|<>{}[\]\\`]/g, " "],
];

function plural(n: string, one: string, many: string): string {
  return n === "1" || n === "1.0" ? one : many;
}

/** "a 60 W bulb", "a $10 fee": an amount after "a"/"an" describes a noun, and its unit stays singular. */
const describesNoun = (before: string) => /\b[Aa]n?\s$/.test(before);

function currency(sym: string, whole: string, cents: string | undefined, scale: string | undefined, singular = false): string {
  const names = CURRENCIES[sym]!;
  const w = whole.replace(/,/g, "");
  const many = singular ? names[0] : names[1];
  if (scale) return `${decimal(w + (cents ? "." + cents : ""))} ${SCALE_WORDS[scale] ?? scale} ${many}`;
  const c = cents ? Number(cents.padEnd(2, "0").slice(0, 2)) : 0;
  const main = `${cardinal(w)} ${plural(w.replace(/^0+(?=\d)/, ""), names[0], many)}`;
  if (!c) return main;
  const sub = `${cardinal(c)} ${c === 1 ? names[2] : names[3]}`;
  return w.replace(/^0+/, "") === "" ? sub : `${main} and ${sub}`;
}

/** "am"/"p.m." as letters: the front end says a run of single capitals letter by letter. */
const meridiem = (suffix: string) => suffix.replace(/\./g, "").toUpperCase().split("").join(" ");

function time(h: string, m: string, suffix: string | undefined): string {
  const hour = cardinal(Number(h));
  const mins = Number(m);
  const minutes = mins === 0 ? (suffix ? "" : Number(h) > 12 ? " hundred" : " o'clock") : mins < 10 ? ` oh ${cardinal(mins)}` : ` ${cardinal(mins)}`;
  return hour + minutes + (suffix ? ` ${meridiem(suffix)}` : "");
}

function date(month: number, day: number, yr: string | undefined, dialect: Dialect): string {
  if (month < 1 || month > 12 || day < 1 || day > 31) return "";
  const m = MONTHS[month - 1]!;
  const d = ordinal(day);
  const head = dialect === "gb" ? `the ${d} of ${m}` : `${m} ${d}`;
  return yr ? `${head}, ${year(yr.length === 2 ? "20" + yr : yr)}` : head;
}

const FRACTIONS: Record<string, [string, string]> = { 2: ["half", "halves"], 4: ["quarter", "quarters"] };

function fraction(n: string, d: string): string {
  const [one, many] = FRACTIONS[d] ?? [ordinal(d), ordinal(d) + "s"];
  return `${cardinal(n)} ${n === "1" ? one : many}`;
}

/** A code's digits: "12" twelve, "249" two forty-nine, "1234" twelve thirty-four, "007" zero zero seven. */
function codeDigits(run: string): string {
  if (run.length > 1 && run.startsWith("0")) return digitByDigit(run);
  if (run.length === 3) return run.endsWith("00") ? cardinal(run) : `${digitByDigit(run[0]!)} ${year("19" + run.slice(1)).replace(/^nineteen /, "")}`;
  if (run.length === 4) return year(run);
  return run.length > 4 ? digitByDigit(run) : cardinal(run);
}

/** Letters and digits run together ("B12", "MP3", "4K", "H2O"): letters spelled, digits as in a code. */
function code(token: string): string {
  return token
    .match(/[A-Z]+|\d+/g)!
    .map((run) => (/\d/.test(run) ? codeDigits(run) : run.length <= 3 ? run.split("").join(" ") : run))
    .join(" ");
}

/** "March 3(rd)(, 2024)" and "(the) 3(rd) (of) March (2024)". */
const MONTH_DAY = new RegExp(`\\b${MONTH_RE}\\s+(\\d{1,2})(?:st|nd|rd|th)?\\b(?:,?\\s+(\\d{4})\\b)?`, "g");
const DAY_MONTH = new RegExp(`\\b([Tt]he\\s+)?(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH_RE}(?:,?\\s+(\\d{4})\\b)?`, "g");

function datesAndTimes(t: string, dialect: Dialect): string {
  // ISO dates, then numeric dates in the dialect's order, then "March 3(rd)(, 2024)" and "(the) 3(rd) (of) March (2024)".
  t = t.replace(/\b(\d{4})-(\d{2})-(\d{2})\b/g, (all, y, mo, d) => date(Number(mo), Number(d), y, dialect) || all);
  t = t.replace(/\b(\d{1,2})\/(\d{1,2})\/(\d{4}|\d{2})\b/g, (all, a, b, y) => {
    const [mo, d] = dialect === "gb" ? [Number(b), Number(a)] : [Number(a), Number(b)];
    return date(mo, d, y, dialect) || all;
  });
  t = t.replace(MONTH_DAY, (all, mo, d, y) =>
    date(monthIndex(mo), Number(d), y, dialect) || all);
  // "the 4th of July" keeps its own "the".
  t = t.replace(DAY_MONTH, (all, the: string | undefined, d, mo, y) => {
    const said = date(monthIndex(mo), Number(d), y, "gb");
    if (!said) return all;
    return the ? the + said.replace(/^the /, "") : said;
  });
  // "p.m." ending a sentence keeps its full stop.
  t = t.replace(/\b(\d{1,2}):(\d{2})(?:\s*([AaPp]\.?[Mm]\b\.?))?(?![\d:])/g, (match, h, m, s: string | undefined, at: number, all: string) =>
    time(h, m, s) + (s?.endsWith(".") && endsSentence(all.slice(at + match.length)) ? "." : ""));
  t = t.replace(/\b(\d{1,2})\s?([AaPp]\.?[Mm])\b(\.?)/g, (match, h, s: string, dot, at: number, all: string) =>
    `${cardinal(h)} ${meridiem(s)}` + (dot && endsSentence(all.slice(at + match.length)) ? "." : ""));
  return t;
}

/** Rewrites one piece of text into speakable words. */
export function normalizeText(input: string, dialect: Dialect = "us"): string {
  let t = input.normalize("NFC");
  t = t.replace(/[‘’‛′]/g, "'").replace(/[«»„‟″]/g, '"').replace(/[–]/g, "—").replace(/\.{3,}/g, "…");
  t = t.replace(/\s+/g, " ");

  t = readAddresses(t);
  t = readPhoneNumbers(t);
  // An abbreviation ending the text ends its sentence too: its dot stays.
  for (const [re, word] of ABBREVIATIONS) t = t.replace(re, (match, ...rest) => word + (match.endsWith(".") && /^\s*$/.test(String(rest.at(-1)).slice(Number(rest.at(-2)) + match.length)) ? "." : ""));
  t = datesAndTimes(t, dialect);
  // Dotted initialisms: "U.S.A." → "U S A" (its last dot kept when it ended the sentence); after
  // the times, which read "a.m." themselves.
  t = t.replace(/\b((?:[A-Za-z]\.){2,})/g, (match, _x, at: number, all: string) =>
    match.replace(/\./g, "").toUpperCase().split("").join(" ") + (endsSentence(all.slice(at + match.length)) ? "." : ""));

  t = t.replace(/([$£€¥₹])\s?(\d[\d,]*)(?:\.(\d+))?(?:\s?(thousand|million|billion|trillion|bn|mn|[kKmMbBT])\b)?/g, (_a, sym, w, c, sc, at: number, all: string) =>
    currency(sym, w, c, sc, describesNoun(all.slice(0, at))));
  t = t.replace(/\b(\d+)\s?¢/g, (_a, n) => `${cardinal(n)} ${n === "1" ? "cent" : "cents"}`);
  // Ranges ("10-20", "10–20%") read "to"; a leading minus reads "minus".
  t = t.replace(/\b(\d+(?:\.\d+)?)\s?[-—]\s?(\d+(?:\.\d+)?)\b/g, "$1 to $2");
  t = t.replace(/(^|[\s(])[-−](\d)/g, "$1minus $2");
  t = t.replace(/(\d+(?:\.\d+)?)\s?%/g, (_a, n) => `${decimal(n)} percent`);
  // Decades before units, or "1990s" would read as seconds.
  t = t.replace(/(?:\b|')(1[1-9]\d\d|20\d\d|[2-9]0)s\b/g, (_a, y: string) => {
    const words = y.length === 2 ? cardinal(y) : year(y);
    return words.replace(/(\w+)$/, (w) => (w.endsWith("y") ? w.slice(0, -1) + "ies" : w + "s"));
  });
  t = t.replace(/\b(\d+)(st|nd|rd|th)\b/gi, (_a, n) => ordinal(n));
  t = t.replace(/\b(\d+(?:\.\d+)?)\s?(km\/h|°[CcFf]|[a-zA-Z]{1,3})\b/g, (match, n, unit: string, at: number, all: string) => {
    const u = UNITS[unit.toLowerCase()];
    if (!u || (unit.length === 1 && !ONE_LETTER_UNITS.test(unit))) return match;
    return `${decimal(n)} ${n === "1" || describesNoun(all.slice(0, at)) ? u[0] : u[1]}`;
  });
  t = t.replace(/\b(\d)\/(\d{1,2})\b/g, (all, n, d) => (d === "1" || d === "0" ? all : fraction(n, d)));
  t = readRomanNumerals(t);
  t = t.replace(/\b(?=[A-Z\d]*[A-Z])(?=[A-Z\d]*\d)[A-Z\d]{2,10}\b/g, code);
  // Four-digit numbers that look like years read as years; numbers with leading zeros digit by digit.
  t = t.replace(/(?<![\d.,])(1[1-9]\d\d|20\d\d)(?![\d,]|\.\d)/g, (_a, y) => year(y));
  t = t.replace(/(?<![\d.,])(?:0\d+|911|999|112)(?![\d.,])/g, (n) => digitByDigit(n));
  t = t.replace(/\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\.\d+|\d+/g, (n) => (n.length > 18 && !/[.,]/.test(n) ? digitByDigit(n) : decimal(n)));

  for (const [re, word] of SYMBOLS) t = t.replace(re, word);
  return t.replace(/\s+/g, " ").replace(/\s+([.,;:!?])/g, "$1").trim();
}
