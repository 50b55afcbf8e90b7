/**
 * Numbers as English words, for the speech front end: cardinals, ordinals, years, decimals and
 * digit strings. Pure functions; anything too long to read as a number is read digit by digit.
 */
const ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"];
const TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
const SCALES = ["", "thousand", "million", "billion", "trillion", "quadrillion"];

/** Above this many digits a number is read digit by digit ("one two three ..."). */
const MAX_CARDINAL_DIGITS = 18;

function underThousand(n: number): string {
  const parts: string[] = [];
  const h = Math.floor(n / 100);
  const rest = n % 100;
  if (h > 0) parts.push(`${ONES[h]} hundred`);
  if (rest > 0) {
    if (rest < 20) parts.push(ONES[rest]!);
    else parts.push(TENS[Math.floor(rest / 10)]! + (rest % 10 ? `-${ONES[rest % 10]}` : ""));
  }
  return parts.join(" ");
}

/** "1234" → "one thousand two hundred thirty-four". Accepts a digit string of any length. */
export function cardinal(digits: string | number): string {
  let s = String(digits).replace(/^0+(?=\d)/, "");
  if (!/^\d+$/.test(s)) return s;
  if (s.length > MAX_CARDINAL_DIGITS) return digitByDigit(s);
  if (s === "0") return "zero";
  const groups: number[] = [];
  while (s.length > 0) {
    groups.unshift(Number(s.slice(-3)));
    s = s.slice(0, -3);
  }
  const words: string[] = [];
  groups.forEach((g, i) => {
    if (g === 0) return;
    const scale = SCALES[groups.length - 1 - i]!;
    words.push(underThousand(g) + (scale ? ` ${scale}` : ""));
  });
  return words.join(" ");
}

export function digitByDigit(digits: string): string {
  return [...digits].filter((c) => c >= "0" && c <= "9").map((c) => ONES[Number(c)]!).join(" ");
}

const ORDINAL_IRREGULAR: Record<string, string> = {
  one: "first", two: "second", three: "third", five: "fifth", eight: "eighth", nine: "ninth", twelve: "twelfth",
};

/** Turns the last word of a cardinal into its ordinal: "twenty-one" → "twenty-first". */
function ordinalOfWords(words: string): string {
  const m = /^(.*?)([a-z]+)$/.exec(words);
  if (!m) return words;
  const [, head, last] = m as unknown as [string, string, string];
  let ord = ORDINAL_IRREGULAR[last];
  if (!ord) ord = last.endsWith("y") ? last.slice(0, -1) + "ieth" : last + "th";
  return head + ord;
}

/** "21" → "twenty-first". */
export function ordinal(digits: string | number): string {
  return ordinalOfWords(cardinal(digits));
}

/**
 * A year as people say it: 1990 → "nineteen ninety", 1905 → "nineteen oh five",
 * 2000 → "two thousand", 2008 → "two thousand eight", 2024 → "twenty twenty-four".
 */
export function year(digits: string | number): string {
  const n = Number(digits);
  if (!Number.isInteger(n) || n < 0 || n > 9999) return cardinal(String(digits));
  if (n < 1000) return cardinal(n);
  const hi = Math.floor(n / 100);
  const lo = n % 100;
  if (n % 1000 === 0 || (n >= 2000 && n < 2010)) return cardinal(n);
  if (lo === 0) return `${cardinal(hi)} hundred`;
  if (lo < 10) return `${cardinal(hi)} oh ${ONES[lo]}`;
  return `${cardinal(hi)} ${cardinal(lo)}`;
}

/** "3.14" → "three point one four"; "-2" → "minus two"; "1,234" → "one thousand ...". */
export function decimal(text: string): string {
  const m = /^([+-])?([\d,]*)(?:\.(\d+))?$/.exec(text);
  if (!m) return text;
  const sign = m[1] === "-" ? "minus " : "";
  const whole = (m[2] ?? "").replace(/,/g, "");
  const frac = m[3];
  const head = whole === "" ? "zero" : cardinal(whole);
  return sign + head + (frac ? ` point ${digitByDigit(frac)}` : "");
}
