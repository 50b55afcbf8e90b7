/**
 * Text normalisation for speech: what a reader says for numbers, dates, times, currency, units,
 * symbols and abbreviations. Runs before grapheme-to-phoneme conversion; the output is plain
 * words and punctuation. Pure string rewriting; never throws on odd input.
 */
import { cardinal, decimal, digitByDigit, ordinal, year } from "./numbers";

export type Dialect = "us" | "gb";

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const MONTH_ABBR: Record<string, number> = {
  jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, sept: 9, oct: 10, nov: 11, dec: 12,
};
const MONTH_RE = "(January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\\.?";

function monthIndex(name: string): number {
  const key = name.replace(/\.$/, "").toLowerCase();
  return MONTH_ABBR[key.slice(0, key === "sept" ? 4 : 3)] ?? 0;
}

/** Abbreviations that always expand the same way (case-sensitive, with their dot). */
const ABBREVIATIONS: [RegExp, string][] = [
  [/\bMr\./g, "mister"], [/\bMrs\./g, "missus"], [/\bMs\./g, "miz"], [/\bDr\./g, "doctor"],
  [/\bProf\./g, "professor"], [/\bSt\.(?=\s+[A-Z])/g, "saint"], [/\bSt\./g, "street"], [/\bMt\./g, "mount"],
  [/\bAve\./g, "avenue"], [/\bRd\./g, "road"], [/\bJr\./g, "junior"], [/\bSr\./g, "senior"],
  [/\bGen\./g, "general"], [/\bCapt\./g, "captain"], [/\bLt\./g, "lieutenant"], [/\bSgt\./g, "sergeant"],
  [/\bGov\./g, "governor"], [/\bInc\./g, "incorporated"], [/\bLtd\./g, "limited"], [/\bCo\./g, "company"],
  [/\bvs\.?(?=\s)/g, "versus"], [/\betc\./g, "et cetera"], [/\be\.g\./gi, "for example"], [/\bi\.e\./gi, "that is"],
  [/\bapprox\./gi, "approximately"], [/\bNo\.(?=\s*\d)/g, "number"], [/\bDept\./g, "department"], [/\bU\.S\./g, "U S"],
];

const UNITS: Record<string, [string, string]> = {
  km: ["kilometer", "kilometers"], m: ["meter", "meters"], cm: ["centimeter", "centimeters"], mm: ["millimeter", "millimeters"],
  kg: ["kilogram", "kilograms"], g: ["gram", "grams"], mg: ["milligram", "milligrams"], lb: ["pound", "pounds"], lbs: ["pound", "pounds"],
  mi: ["mile", "miles"], ft: ["foot", "feet"], mph: ["mile per hour", "miles per hour"], "km/h": ["kilometer per hour", "kilometers per hour"],
  kb: ["kilobyte", "kilobytes"], mb: ["megabyte", "megabytes"], gb: ["gigabyte", "gigabytes"], tb: ["terabyte", "terabytes"],
  ms: ["millisecond", "milliseconds"], s: ["second", "seconds"], min: ["minute", "minutes"], h: ["hour", "hours"], hz: ["hertz", "hertz"],
  khz: ["kilohertz", "kilohertz"], l: ["liter", "liters"], ml: ["milliliter", "milliliters"], "°c": ["degree Celsius", "degrees Celsius"], "°f": ["degree Fahrenheit", "degrees Fahrenheit"],
};

const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ["dollar", "dollars", "cent", "cents"],
  "£": ["pound", "pounds", "penny", "pence"],
  "€": ["euro", "euros", "cent", "cents"],
  "¥": ["yen", "yen", "sen", "sen"],
};

const SYMBOLS: [RegExp, string][] = [
  [/&/g, " and "], [/\+/g, " plus "], [/=/g, " equals "], [/@/g, " at "], [/#(?=\d)/g, "number "],
  [/°/g, " degrees "], [/×/g, " times "], [/\//g, " slash "], [/[_*~^|<>{}[\]\\`]/g, " "],
];

function plural(n: string, one: string, many: string): string {
  return n === "1" || n === "1.0" ? one : many;
}

function currency(sym: string, whole: string, cents: string | undefined, scale: string | undefined): string {
  const names = CURRENCIES[sym]!;
  const w = whole.replace(/,/g, "");
  if (scale) return `${decimal(w + (cents ? "." + cents : ""))} ${scale} ${names[1]}`;
  const c = cents ? Number(cents.padEnd(2, "0").slice(0, 2)) : 0;
  const main = `${cardinal(w)} ${plural(w.replace(/^0+(?=\d)/, ""), names[0], names[1])}`;
  if (!c) return main;
  const sub = `${cardinal(c)} ${c === 1 ? names[2] : names[3]}`;
  return w.replace(/^0+/, "") === "" ? sub : `${main} and ${sub}`;
}

function time(h: string, m: string, suffix: string | undefined): string {
  const hour = cardinal(Number(h));
  const mins = Number(m);
  const minutes = mins === 0 ? (suffix ? "" : " o'clock") : mins < 10 ? ` oh ${cardinal(mins)}` : ` ${cardinal(mins)}`;
  const ampm = suffix ? ` ${suffix.replace(/\./g, "").toLowerCase().split("").join(" ").toUpperCase()}` : "";
  return hour + minutes + ampm;
}

function date(month: number, day: number, yr: string | undefined, dialect: Dialect): string {
  if (month < 1 || month > 12 || day < 1 || day > 31) return "";
  const m = MONTHS[month - 1]!;
  const d = ordinal(day);
  const head = dialect === "gb" ? `the ${d} of ${m}` : `${m} ${d}`;
  return yr ? `${head}, ${year(yr.length === 2 ? "20" + yr : yr)}` : head;
}

/** Rewrites one piece of text into speakable words. */
export function normalizeText(input: string, dialect: Dialect = "us"): string {
  let t = input.normalize("NFC");
  t = t.replace(/[‘’‛′]/g, "'").replace(/[«»„‟″]/g, '"').replace(/[–]/g, "—").replace(/\.{3,}/g, "…");
  t = t.replace(/\s+/g, " ");

  for (const [re, word] of ABBREVIATIONS) t = t.replace(re, word);

  // ISO dates, then numeric dates in the dialect's order, then "March 3(rd)(, 2024)" and "3 March (2024)".
  t = t.replace(/\b(\d{4})-(\d{2})-(\d{2})\b/g, (all, y, mo, d) => date(Number(mo), Number(d), y, dialect) || all);
  t = t.replace(/\b(\d{1,2})\/(\d{1,2})\/(\d{4}|\d{2})\b/g, (all, a, b, y) => {
    const [mo, d] = dialect === "gb" ? [Number(b), Number(a)] : [Number(a), Number(b)];
    return date(mo, d, y, dialect) || all;
  });
  t = t.replace(new RegExp(`\\b${MONTH_RE}\\s+(\\d{1,2})(?:st|nd|rd|th)?\\b(?:,?\\s+(\\d{4})\\b)?`, "g"), (all, mo, d, y) =>
    date(monthIndex(mo), Number(d), y, dialect) || all);
  t = t.replace(new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH_RE}(?:,?\\s+(\\d{4})\\b)?`, "g"), (all, d, mo, y) =>
    date(monthIndex(mo), Number(d), y, "gb") || all);

  // "p.m." ending a sentence keeps its full stop.
  t = t.replace(/\b(\d{1,2}):(\d{2})(?:\s*([AaPp]\.?[Mm]\b\.?))?(?![\d:])/g, (_a, h, m, s, at: number, all: string) => {
    const rest = all.slice(at + _a.length);
    return time(h, m, s) + (s?.endsWith(".") && /^(\s*$|\s+[A-Z])/.test(rest) ? "." : "");
  });
  t = t.replace(/(\d)\s?([AaPp])\.?[Mm]\b(\.?)/g, (_a, d, x, dot, at: number, all: string) =>
    `${d} ${x.toUpperCase()} M` + (dot && /^(\s*$|\s+[A-Z])/.test(all.slice(at + _a.length)) ? "." : ""));
  t = t.replace(/([$£€¥])\s?(\d[\d,]*)(?:\.(\d+))?(?:\s?(thousand|million|billion|trillion)\b)?/g, (_a, sym, w, c, sc) => currency(sym, w, c, sc));
  t = t.replace(/(\d+(?:\.\d+)?)\s?%/g, (_a, n) => `${decimal(n)} percent`);
  // Decades before units, or "1990s" would read as seconds.
  t = t.replace(/\b(1[1-9]\d\d|20\d\d)s\b/g, (_a, y) => year(y).replace(/(\w+)$/, (w) => (w.endsWith("y") ? w.slice(0, -1) + "ies" : w + "s")));
  t = t.replace(/\b(\d+)(st|nd|rd|th)\b/gi, (_a, n) => ordinal(n));
  t = t.replace(/\b(\d+(?:\.\d+)?)\s?(km\/h|°[CcFf]|[a-zA-Z]{1,3})\b/g, (all, n, unit) => {
    const u = UNITS[String(unit).toLowerCase()];
    if (!u || (unit.length === 1 && !/^[mgshlMGSHL]$/.test(unit))) return all;
    return `${decimal(n)} ${n === "1" ? u[0] : u[1]}`;
  });
  // Ranges ("10-20") read "to"; a leading minus reads "minus".
  t = t.replace(/\b(\d+)\s?[-—]\s?(\d+)\b/g, "$1 to $2");
  t = t.replace(/(^|[\s(])-(\d)/g, "$1minus $2");
  // Four-digit numbers that look like years read as years; other numbers as cardinals/decimals.
  t = t.replace(/(?<![\d.,])(1[1-9]\d\d|20\d\d)(?![\d,]|\.\d)/g, (_a, y) => year(y));
  t = t.replace(/\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\.\d+|\d+/g, (n) => (n.length > 18 && !/[.,]/.test(n) ? digitByDigit(n) : decimal(n)));

  for (const [re, word] of SYMBOLS) t = t.replace(re, word);
  return t.replace(/\s+/g, " ").trim();
}
