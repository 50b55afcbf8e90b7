/**
 * Things read out character by character rather than as numbers or words: web addresses,
 * e-mail addresses and phone numbers. "example.com/docs" → "example dot com slash docs",
 * "ann.lee@mail.org" → "ann dot lee at mail dot org", "555-0123" → "five five five, oh one two
 * three" (the groups become clauses, so the voice pauses between them as people do).
 */
import { digitByDigit } from "./numbers";

const TLDS = "com|org|net|edu|gov|io|ai|dev|app|co|uk|us|de|fr|jp|ca|au|info|biz|me|tv|ly|gg|xyz|eu|nl|es|it|ch|se|no|in";

/** Digits as a phone number says them: zero is "oh". */
export function phoneDigits(digits: string): string {
  return [...digits].filter((c) => /\d/.test(c)).map((c) => (c === "0" ? "oh" : digitByDigit(c))).join(" ");
}

/** One piece of an address: words stay, digits are said one by one, symbols are named. */
function spellPiece(piece: string): string {
  return piece
    .replace(/\d+/g, (d) => ` ${digitByDigit(d)} `)
    .replace(/-/g, " dash ")
    .replace(/_/g, " underscore ")
    .replace(/~/g, " tilde ")
    .replace(/\+/g, " plus ")
    .replace(/=/g, " equals ")
    .replace(/[?&#%]/g, " ");
}

function spellHost(host: string): string {
  return host
    .split(".")
    .map((p) => (p.toLowerCase() === "www" ? "W W W" : spellPiece(p)))
    .join(" dot ");
}

function spellUrl(url: string): string {
  const m = /^(?:(https?|ftp):\/\/)?([^/\s]+)(\/.*)?$/i.exec(url)!;
  const path = (m[3] ?? "").replace(/\/+$/, "");
  const spokenPath = path
    .split("/")
    .filter((p) => p.length > 0)
    .map((p) => p.split(".").map(spellPiece).join(" dot "))
    .join(" slash ");
  return `${spellHost(m[2]!)}${spokenPath ? ` slash ${spokenPath}` : ""}`;
}

/** A URL with a scheme, or a host ending in a known top-level domain, and its path. */
const WEB_ADDRESS = new RegExp(`\\b(?:(?:https?|ftp):\\/\\/[^\\s<>"]+|(?:www\\.)?[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.(?:${TLDS})\\b(?:\\/[^\\s<>"]*)?)`, "gi");

export function readAddresses(text: string): string {
  // E-mail before web addresses: "ann@mail.org" would otherwise be read as a host.
  let t = text.replace(/\b([A-Za-z0-9._%+-]+)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b/g, (_all, user: string, host: string) =>
    ` ${user.split(".").map(spellPiece).join(" dot ")} at ${spellHost(host)} `,
  );
  t = t.replace(WEB_ADDRESS, (url, at: number, all: string) => {
    // A trailing full stop or comma belongs to the sentence, not the address.
    const trail = /[.,;:!?)]+$/.exec(url)?.[0] ?? "";
    const body = url.slice(0, url.length - trail.length);
    if (at > 0 && all[at - 1] === "@") return url;
    return ` ${spellUrl(body)}${trail} `;
  });
  return t;
}

/**
 * Phone numbers: +country groups, (555) 123-4567, 555-123-4567, 1-800-555-0199, 555.123.4567
 * and the seven-digit 555-0123. Other dashed numbers are left for the range rule ("10-20").
 */
export function readPhoneNumbers(text: string): string {
  const say = (groups: string[]) => groups.map(phoneDigits).join(", ");
  let t = text.replace(/(?<![\w+])\+(\d{1,3})((?:[\s.-]?\(?\d{1,4}\)?){2,5})(?![\d-])/g, (_all, country: string, rest: string) =>
    `plus ${say([country, ...rest.split(/[\s.()-]+/).filter(Boolean)])}`,
  );
  t = t.replace(/(?<![\w-])(?:(1)[-.\s])?\((\d{3})\)\s?(\d{3})[-.\s](\d{4})(?![\w-])/g, (_all, one: string | undefined, a, b, c) => say([...(one ? [one] : []), a, b, c]));
  t = t.replace(/(?<![\w-])(?:(1)[-.])?(\d{3})([-.])(\d{3})\3(\d{4})(?![\w-])/g, (_all, one: string | undefined, a, _sep, b, c) => say([...(one ? [one] : []), a, b, c]));
  t = t.replace(/(?<![\w.-])(\d{3})-(\d{4})(?![\w-]|\.\d)/g, (_all, a, b) => say([a, b]));
  return t;
}
