/**
 * Seeded HTTP/1.1 responses for the upstream client's differential test
 * (src/upstream/http1/differential.test.ts): well-formed ones of every framing an upstream may
 * use, and mutations of them (bytes flipped, inserted, deleted; lines repeated; CRLF turned to LF;
 * cut short; framing headers and stray bytes spliced in), mostly in the head, where framing is
 * decided. The same seed always gives the same bytes. Responses are latin-1 strings: one
 * character per byte.
 */
import { rng } from "./seeded-random";

/** Seeded choices (mulberry32 underneath): the same seed, the same responses. */
export function seeded(seed: number) {
  const next = rng(seed);
  const int = (n: number) => Math.floor(next() * n);
  return { int, chance: (p: number) => next() < p, pick: <T>(xs: readonly T[]): T => xs[int(xs.length)]! };
}
export type Random = ReturnType<typeof seeded>;

const STATUSES = [200, 200, 200, 201, 204, 206, 304, 400, 404, 429, 500, 502, 503];
const HEADERS = [
  ["Content-Type", "text/event-stream"],
  ["X-Request-Id", "abc-123"],
  ["Server", "engine/1.0"],
  ["Set-Cookie", "a=b; Path=/"],
  ["X-Empty", ""],
  ["X-Spaced", "  v  "],
  ["X-Obs", "caf\xe9"],
  ["X-Tab", "a\tb"],
  ["Cache-Control", "no-cache"],
  ["Connection", "keep-alive"],
  ["Connection", "close"],
  ["Connection", "Keep-Alive, Upgrade"],
  ["X-Dup", "1"],
  ["X-Dup", "2"],
] as const;
/** Body pieces that look like framing, to catch a body read as anything but bytes. */
const BODY_PIECES = ['data: {"x":1}\n\n', "\r\n", "0\r\n\r\n", "HTTP/1.1 200 OK\r\n", "abc", "\xe9\xff", "\x00"];

/** Header names in random letter case (names are case-insensitive). */
const anyCase = (r: Random, name: string) => [...name].map((c) => (r.chance(0.3) ? (r.chance(0.5) ? c.toUpperCase() : c.toLowerCase()) : c)).join("");

function body(r: Random): string {
  let s = "";
  for (let n = r.int(8); n > 0; n--) s += r.chance(0.5) ? r.pick(BODY_PIECES) : String.fromCharCode(...Array.from({ length: r.int(40) }, () => r.int(256)));
  return s;
}

/** A well-formed response: maybe an interim one first, then a final one framed by length, chunks or close. */
export function wellFormed(r: Random): string {
  let out = r.chance(0.1) ? r.pick(["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n"]) : "";
  const status = r.pick(STATUSES);
  const reason = r.pick(["OK", "", "Some Reason", "\xe9t\xe9", "x\ty"]);
  out += `HTTP/${r.chance(0.85) ? "1.1" : "1.0"} ${status}${reason === "" && r.chance(0.5) ? "" : ` ${reason}`}\r\n`;
  const headers: string[] = [];
  for (let n = r.int(6); n > 0; n--) {
    const [name, value] = r.pick(HEADERS);
    headers.push(`${anyCase(r, name)}:${r.pick([" ", "", "\t", "  "])}${value}${r.pick(["", "", " ", "\t"])}`);
  }
  const bodiless = status === 204 || status === 304;
  const content = bodiless ? "" : body(r);
  const framing = bodiless ? r.pick(["none", "length"]) : r.pick(["length", "length", "chunked", "chunked", "close"]);
  let rest = "";
  if (framing === "length") {
    headers.splice(r.int(headers.length + 1), 0, `${anyCase(r, "Content-Length")}:${r.pick([" ", "", "  "])}${content.length}${r.pick(["", " "])}`);
    rest = content;
  } else if (framing === "chunked") {
    headers.splice(r.int(headers.length + 1), 0, `${anyCase(r, "Transfer-Encoding")}: ${anyCase(r, "chunked")}`);
    for (let i = 0; i < content.length; ) {
      const size = 1 + r.int(Math.min(64, content.length - i));
      let hex = size.toString(16);
      if (r.chance(0.2)) hex = hex.toUpperCase();
      if (r.chance(0.1)) hex = "0".repeat(r.int(4)) + hex;
      rest += `${hex}${r.chance(0.1) ? r.pick([";a=b", ";name", ';q="x y"']) : ""}\r\n${content.slice(i, i + size)}\r\n`;
      i += size;
    }
    rest += `${r.pick(["0", "00", "000"])}${r.chance(0.1) ? ";ext=1" : ""}\r\n`;
    if (r.chance(0.2)) rest += r.pick(["X-Trailer: 1\r\n", "Checksum: abc\r\nX-More:\r\n"]);
    rest += "\r\n";
  } else if (framing === "close") rest = content;
  return `${out}${headers.map((h) => `${h}\r\n`).join("")}\r\n${rest}`;
}

/** Bytes that mean something to a parser: NUL, HTAB, LF, CR, SP, ":", ";", digits, hex, DEL, obs-text, ",", quote, signs. */
const TELLING = [0, 9, 10, 13, 32, 58, 59, 48, 49, 57, 97, 102, 70, 127, 128, 255, 44, 34, 45, 43];
const SPLICED = ["Content-Length: 3\r\n", "Transfer-Encoding: chunked\r\n", " folded\r\n", "\r\n", ";", " ", "Transfer-Encoding: gzip\r\n", "Content-Length: 1, 2\r\n"];

/** One to three mutations of `response`, at positions in its head more often than not. */
export function mutated(r: Random, response: string): string {
  let s = response;
  for (let n = 1 + r.int(3); n > 0; n--) {
    const headEnd = s.indexOf("\r\n\r\n");
    const at = r.chance(0.6) && headEnd > 0 ? r.int(headEnd + 4) : r.int(s.length + 1);
    const byte = String.fromCharCode(r.chance(0.7) ? r.pick(TELLING) : r.int(256));
    switch (r.int(7)) {
      case 0:
        s = s.slice(0, at) + byte + s.slice(at + 1);
        break;
      case 1:
        s = s.slice(0, at) + byte + s.slice(at);
        break;
      case 2:
        s = s.slice(0, at) + s.slice(at + 1);
        break;
      case 3: {
        const lines = s.split("\r\n");
        const i = r.int(lines.length);
        lines.splice(i, 0, lines[i]!);
        s = lines.join("\r\n");
        break;
      }
      case 4: {
        const crlf = s.indexOf("\r\n", at);
        if (crlf >= 0) s = `${s.slice(0, crlf)}\n${s.slice(crlf + 2)}`;
        break;
      }
      case 5:
        s = s.slice(0, at);
        break;
      case 6:
        s = s.slice(0, at) + r.pick(SPLICED) + s.slice(at);
        break;
    }
  }
  return s;
}
