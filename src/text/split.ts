/**
 * Splits text into contiguous slices (their concatenation is the input, so billed characters can
 * be attributed to the audio of each slice): sentences first, then clauses, then words, so a
 * slice too long for the model can be cut at the most natural place available.
 */

/** Words whose trailing dot does not end a sentence. */
const NO_BREAK = new Set([
  "mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "gen", "capt", "lt",
  "sgt", "gov", "inc", "ltd", "co", "ave", "rd", "dept", "approx", "fig", "vol", "jan", "feb", "mar", "apr", "jun",
  "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "a.m", "p.m",
]);

function endsWithAbbreviation(before: string): boolean {
  const m = /([A-Za-z][A-Za-z.]*)\.$/.exec(before);
  if (!m) return false;
  const word = m[1]!.toLowerCase();
  // A single capital letter is an initial ("J. R. R. Tolkien").
  return NO_BREAK.has(word) || /^[A-Z]$/.test(m[1]!);
}

/** Sentence slices: a break after . ! ? … (plus closing quotes/brackets) before whitespace, and at blank lines. */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  const re = /([.!?…]+["'”’)\]]*)(\s+)|(\n\s*\n\s*)/g;
  let start = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const end = m.index + m[0].length;
    if (m[1] && m[1].startsWith(".") && m[1].length === 1 && endsWithAbbreviation(text.slice(start, m.index + 1))) continue;
    out.push(text.slice(start, end));
    start = end;
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

/**
 * Breaks the normaliser must not see: a date's comma before its year ("June 3rd, 2024"), a
 * month before its day, a word after a number ("6:45 pm", "3 billion", "5 km") and a name after
 * its title ("Dr. Smith"), since each half is read on its own.
 */
type Hold = (before: string, after: string) => boolean;
const DATE_YEAR: Hold = (before, after) => /\d(?:st|nd|rd|th)?,\s*$/.test(before) && /^\d{4}\b/.test(after);
const AFTER_NUMBER: Hold = (before) => /\d\S*\s+$/.test(before);
const MONTH_DAY: Hold = (before, after) =>
  /(?:^|\s)(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?\s+$/.test(before) && /^\d/.test(after);
const AFTER_TITLE: Hold = (before) => /(?:^|\s)(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|No|Gen|Capt|Lt|Sgt|Gov|Sen|Rep|Jr|Sr)\.\s+$/.test(before);

function keepTogether(pieces: string[], holds: Hold[]): string[] {
  const out: string[] = [];
  for (const p of pieces) {
    const prev = out[out.length - 1];
    if (prev !== undefined && holds.some((held) => held(prev, p))) out[out.length - 1] = prev + p;
    else out.push(p);
  }
  return out;
}

/** Clause slices: after , ; : — and dashes followed by whitespace. */
export function splitClauses(text: string): string[] {
  return keepTogether(splitAfter(text, /([,;:—]|\s-)(\s+)/g), [DATE_YEAR]);
}

/** Word slices (each keeps its trailing whitespace). */
export function splitWords(text: string): string[] {
  return keepTogether(splitAfter(text, /(\S)(\s+)/g), [DATE_YEAR, MONTH_DAY, AFTER_NUMBER, AFTER_TITLE]);
}

function splitAfter(text: string, re: RegExp): string[] {
  const out: string[] = [];
  let start = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const end = m.index + m[0].length;
    out.push(text.slice(start, end));
    start = end;
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

/**
 * Packs consecutive slices greedily into groups whose measure stays within `limit`, so a long
 * sentence becomes as few model calls as possible. A single slice over the limit stays alone
 * (the caller splits it further).
 */
export function pack<T>(items: T[], measure: (group: T[]) => number, limit: number): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  for (const item of items) {
    if (current.length > 0 && measure([...current, item]) > limit) {
      groups.push(current);
      current = [];
    }
    current.push(item);
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
