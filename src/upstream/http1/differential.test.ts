/**
 * The upstream client's reading of responses (exchange.ts over parser.ts, fed bytes in process:
 * test/support/exchange-driver.ts) against llhttp, Node's and undici's parser in its strict mode
 * (test/support/llhttp.ts): a corpus of malformed and smuggling-style responses, seeded
 * well-formed responses, and seeded mutations of them. Both must agree — refuse, or read the same
 * status, headers and body — except where DELIBERATE names the difference and says why. Every
 * response is also read cut into seeded pieces (socket reads): the verdict must not change.
 *
 * Seeds are fixed, so a run is reproducible; a failure prints the seed and the bytes.
 * HTTP1_DIFF_CASES=<n> runs more seeds than the default 2,000 of each (the rules were checked on 400,000).
 */
import { describe, expect, test } from "bun:test";
import { llhttpVerdict, type Verdict } from "../../../test/support/llhttp";
import { exchangeVerdict } from "../../../test/support/exchange-driver";
import { mutated, seeded, wellFormed, type Random } from "../../../test/support/http1-responses";

const CASES = Number(process.env.HTTP1_DIFF_CASES ?? 2_000);
const bytes = (s: string) => new Uint8Array(Buffer.from(s, "latin1"));

/**
 * A verdict as comparable text. llhttp hands over each field line as sent; the client lower-cases
 * names, drops the SP and HTAB around values (which llhttp leaves to its caller: Node and undici
 * trim them) and joins repeated fields with ", ": llhttp's lines are brought to that form.
 */
function summary(v: Verdict, fromLlhttp = false): string {
  if (!v.ok) return "refused";
  let headers = v.headers;
  if (fromLlhttp) {
    const joined = new Map<string, string>();
    for (const [name, raw] of v.headers) {
      const value = raw.replace(/^[ \t]+|[ \t]+$/g, "");
      const key = name.toLowerCase();
      joined.set(key, joined.has(key) ? `${joined.get(key)}, ${value}` : value);
    }
    headers = [...joined];
  }
  return `${v.status} ${JSON.stringify(headers)} ${JSON.stringify(Buffer.from(v.body).toString("latin1"))}`;
}

const header = (v: Verdict, name: string) => (v.ok ? new Map(v.headers).get(name) : undefined);
const refusal = (v: Verdict) => (v.ok ? "" : v.reason);
/** Where each response of `raw` starts: the interim (1xx) ones, then the final one. */
function responseStarts(raw: string): number[] {
  const starts: number[] = [];
  for (let at = 0; at >= 0 && at < raw.length; ) {
    starts.push(at);
    const headEnd = raw.indexOf("\r\n\r\n", at);
    at = /^HTTP\/\S+ 1\d\d/.test(raw.slice(at, at + 16)) && headEnd >= 0 ? headEnd + 4 : -1;
  }
  return starts;
}
const statusLines = (raw: string) => responseStarts(raw).map((at) => raw.slice(at).split("\r\n", 1)[0]!);

interface Deliberate {
  why: string;
  /** Whether this choice explains the difference between the client's verdict and llhttp's. */
  explains(raw: string, ours: Verdict, theirs: Verdict): boolean;
}

/** Where the client and llhttp differ on purpose. */
const DELIBERATE: Record<string, Deliberate> = {
  "repeated identical Content-Length": {
    why: "RFC 9110 §8.6 lets a recipient take identical repeated values as one; the body is framed alike either way (differing values are refused)",
    explains: (_, ours, theirs) => /Content-Length/.test(refusal(theirs)) && /^(\d+)(?:, \1)+$/.test(header(ours, "content-length") ?? ""),
  },
  "Transfer-Encoding overrides Content-Length": {
    why: "RFC 9112 §6.3: chunked framing wins; such a connection is closed after the reply (exchange.ts), so bytes framed otherwise reach no other request",
    explains: (_, ours, theirs) => /Content-Length/.test(refusal(theirs)) && header(ours, "transfer-encoding") !== undefined && header(ours, "content-length") !== undefined,
  },
  "HTAB around a value is not part of it": {
    why: "RFC 9110 §5.5: a field value excludes the SP and HTAB around it; llhttp keeps a trailing HTAB in Content-Length (refusing it) and Transfer-Encoding (then not chunked: it reads to the close)",
    // Shown by llhttp itself: without the whitespace at the ends of the head's lines, it reads what the client read.
    explains: (raw, ours, theirs) => {
      const head = raw.indexOf("\r\n\r\n");
      if (!ours.ok || head < 0 || !/\t[ \t]*\r\n/.test(raw.slice(0, head + 2))) return false;
      const trimmed = raw.slice(0, head + 2).replace(/[ \t]+\r\n/g, "\r\n") + raw.slice(head + 2);
      return summary(theirs, true) !== summary(ours) && summary(llhttpVerdict(bytes(trimmed)), true) === summary(ours);
    },
  },
  "a bare CR ends no line": {
    why: "RFC 9112 §2.2: lines end with CRLF, and a bare CR is refused; llhttp takes CR CR after the status line as its end",
    explains: (raw, ours, theirs) => !ours.ok && theirs.ok && statusLines(raw).some((line) => line.includes("\r")),
  },
  "no body after 204 or 304": {
    why: "a 204 or 304 has no body whatever its Content-Length says (RFC 9112 §6.3), so the value is not read; such a connection is never reused",
    explains: (_, ours, theirs) => ours.ok && (ours.status === 204 || ours.status === 304) && /Content-Length/.test(refusal(theirs)),
  },
  "chunk lines read up to CRLF": {
    why: "RFC 9112 §7.1.1 allows whitespace (BWS) around ';' and '='; extensions are skipped unread to the CRLF, control bytes refused, so they cannot move where a chunk ends",
    explains: (raw, ours, theirs) => ours.ok && !theirs.ok && theirs.afterHead === true && /chunk (size|extension)/i.test(theirs.reason) && /(?:^|\n)[0-9a-fA-F]+[ \t;]/.test(raw),
  },
  "trailers skipped unread": {
    why: "the trailer section is read only for where it ends (CRLF-terminated lines, control bytes refused): the client uses no trailer, and the body was whole before it",
    explains: (_, ours, theirs) => ours.ok && !theirs.ok && theirs.afterHead === true && /header|whitespace|Content-Length/i.test(theirs.reason) && /chunked/i.test(header(ours, "transfer-encoding") ?? ""),
  },
  "no control bytes in chunk extensions": {
    why: "RFC 9110 §5.6: chunk extensions are tokens and quoted strings, which hold no control byte but HTAB (llhttp lets DEL into a quoted string)",
    explains: (raw, ours, theirs) => theirs.ok && /control character in a chunk extension/.test(refusal(ours)) && /\n[0-9a-fA-F]+[ \t]*;[^\r\n]*[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(raw),
  },
  "an interim response ends with its head": {
    why: "RFC 9110 §15.2: a 1xx response is terminated by the end of its header section, whatever its version or framing headers; the final one follows",
    // Shown by llhttp itself: given the final response alone, it reads what the client read.
    explains: (raw, ours, theirs) => ours.ok && !theirs.ok && responseStarts(raw).length > 1 && summary(llhttpVerdict(bytes(raw.slice(responseStarts(raw).at(-1)))), true) === summary(ours),
  },
  "chunked alone as transfer coding": {
    why: "the client sends no TE, so chunked (once) is the only transfer coding it can get: another would hand the relay bytes it cannot read",
    explains: (_, ours) => /unrequested transfer-encoding/.test(refusal(ours)),
  },
  "identity content coding only": {
    why: "the client asks for accept-encoding: identity; a compressed body would hand the relay bytes it cannot read",
    explains: (_, ours) => /unrequested content-encoding/.test(refusal(ours)),
  },
  "a status line first: HTTP/1.x, 100-599, no control bytes": {
    why: "RFC 9110 §15: statuses outside 100-599 are invalid (a client SHOULD treat one as a 5xx: refused, the attempt fails over alike); another version is not HTTP/1.1's; a response starts with its status line (RFC 9112 §2.2's leading empty lines are a server's allowance); RFC 9112 §4: a reason phrase is HTAB, SP and visible characters",
    explains: (raw, ours, theirs) =>
      /malformed status line/.test(refusal(ours)) &&
      theirs.ok &&
      statusLines(raw).some((line) => {
        const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/s.exec(line);
        return m === null || Number(m[1]) < 100 || Number(m[1]) > 599 || /[\x00-\x08\x0a-\x1f\x7f]/.test(m[2] ?? "");
      }),
  },
  "bounded heads, lines and lengths": {
    why: "memory per reply is bounded: a head of 64 KiB, chunk and trailer lines of 4 KiB, lengths of 15 decimal or 12 hex digits (leading zeros included) at most",
    explains: (raw, ours, theirs) =>
      theirs.ok &&
      (/response head over|chunk line too long/.test(refusal(ours)) ||
        (/invalid content-length/.test(refusal(ours)) && /content-length:[ \t]*\d{16}/i.test(raw)) ||
        (/invalid chunk size/.test(refusal(ours)) && /(?:^|\n)[0-9a-fA-F]{13}/.test(raw))),
  },
};

const both = (raw: string, ours: Verdict, theirs: Verdict) =>
  `${JSON.stringify(raw).slice(0, 600)}\n  client: ${summary(ours)} ${refusal(ours)}\n  llhttp: ${summary(theirs, true)} ${refusal(theirs)}`;

/**
 * What is wrong with the two verdicts on `raw`: null when they agree, or differ as one of
 * DELIBERATE explains (as `named` explains, when given: then they must differ).
 */
function disagreement(raw: string, ours: Verdict, theirs: Verdict, named?: string): string | null {
  const same = summary(ours) === summary(theirs, true);
  if (named === undefined) {
    if (same || Object.values(DELIBERATE).some((d) => d.explains(raw, ours, theirs))) return null;
  } else if (!same && DELIBERATE[named]!.explains(raw, ours, theirs)) return null;
  return `${both(raw, ours, theirs)}${named ? `\n  expected to differ by: ${named}` : ""}`;
}

/** The client's verdict on `raw` read whole, and whether reading it in pieces changed it. */
async function ours(raw: string, r: Random): Promise<{ verdict: Verdict; split: string | null }> {
  const whole = await exchangeVerdict(bytes(raw));
  const cuts = Array.from({ length: 1 + r.int(6) }, () => r.int(raw.length));
  const pieces = await exchangeVerdict(bytes(raw), cuts);
  const split = summary(pieces) === summary(whole) ? null : `cut at ${cuts}: ${summary(pieces)} ${refusal(pieces)} against ${summary(whole)} ${refusal(whole)}`;
  return { verdict: whole, split };
}

const TE = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
const HI = "content-length: 2\r\n\r\nhi";
/** Malformed and edge-case responses: what the client makes of each, and the rule where llhttp differs. */
const CORPUS: { name: string; raw: string; ours: string; deliberate?: string }[] = [
  { name: "content-length", raw: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", ours: "200 hello" },
  { name: "chunked", raw: `${TE}5\r\nhello\r\n0\r\n\r\n`, ours: "200 hello" },
  { name: "close-delimited", raw: "HTTP/1.1 200 OK\r\n\r\nuntil the end", ours: "200 until the end" },
  { name: "identical Content-Length twice", raw: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\nhello", ours: "200 hello", deliberate: "repeated identical Content-Length" },
  { name: "identical Content-Length list", raw: "HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\nhello", ours: "200 hello", deliberate: "repeated identical Content-Length" },
  { name: "conflicting Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!", ours: "refused" },
  { name: "conflicting Content-Length list", raw: "HTTP/1.1 200 OK\r\ncontent-length: 6, 5\r\n\r\nhello!", ours: "refused" },
  { name: "CL then TE", raw: "HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", ours: "200 hello", deliberate: "Transfer-Encoding overrides Content-Length" },
  { name: "TE then CL", raw: "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 30\r\n\r\n5\r\nhello\r\n0\r\n\r\n", ours: "200 hello", deliberate: "Transfer-Encoding overrides Content-Length" },
  { name: "TE gzip, chunked", raw: "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", ours: "refused", deliberate: "chunked alone as transfer coding" },
  { name: "TE chunked twice", raw: "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", ours: "refused", deliberate: "chunked alone as transfer coding" },
  { name: "TE gzip alone", raw: "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nabc", ours: "refused", deliberate: "chunked alone as transfer coding" },
  { name: "TE in any case, on HTTP/1.0", raw: "HTTP/1.0 200 OK\r\ntransfer-encoding: ChUnKeD\r\n\r\n5\r\nhello\r\n0\r\n\r\n", ours: "200 hello" },
  { name: "content-encoding gzip", raw: `HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n${HI}`, ours: "refused", deliberate: "identity content coding only" },
  { name: "chunk size 0x5", raw: `${TE}0x5\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "chunk size -1", raw: `${TE}-1\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "chunk size with a space before it", raw: `${TE} 5\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "chunk size, space, digit", raw: `${TE}5 1\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "chunk size with a space after it", raw: `${TE}5 \r\nhello\r\n0\r\n\r\n`, ours: "200 hello", deliberate: "chunk lines read up to CRLF" },
  { name: "chunk extension with BWS", raw: `${TE}5 ; a = b\r\nhello\r\n0\r\n\r\n`, ours: "200 hello", deliberate: "chunk lines read up to CRLF" },
  { name: "empty chunk extension", raw: `${TE}5;\r\nhello\r\n0\r\n\r\n`, ours: "200 hello", deliberate: "chunk lines read up to CRLF" },
  { name: "quoted chunk extension", raw: `${TE}5;a="x y"\r\nhello\r\n0\r\n\r\n`, ours: "200 hello" },
  { name: "NUL in a chunk extension", raw: `${TE}5;a\x00\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "DEL in a quoted chunk extension", raw: `${TE}5;a="b\x7f"\r\nhello\r\n0\r\n\r\n`, ours: "refused", deliberate: "no control bytes in chunk extensions" },
  { name: "chunk size of 13 digits", raw: `${TE}0000000000005\r\nhello\r\n0\r\n\r\n`, ours: "refused", deliberate: "bounded heads, lines and lengths" },
  { name: "chunk size past 64 bits", raw: `${TE}ffffffffffffffffff\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "chunk data longer than its size", raw: `${TE}3\r\nhello\r\n0\r\n\r\n`, ours: "refused" },
  { name: "chunk lines ended by LF", raw: `${TE}5\nhello\n0\n\n`, ours: "refused" },
  { name: "chunk line over 4 KiB", raw: `${TE}5;${"a".repeat(5000)}\r\nhello\r\n0\r\n\r\n`, ours: "refused", deliberate: "bounded heads, lines and lengths" },
  { name: "trailers", raw: `${TE}5\r\nhello\r\n0\r\nx-t: 1\r\n\r\n`, ours: "200 hello" },
  { name: "malformed trailer", raw: `${TE}5\r\nhello\r\n0\r\nx t: 1\r\n\r\n`, ours: "200 hello", deliberate: "trailers skipped unread" },
  { name: "Content-Length as a trailer", raw: `${TE}5\r\nhello\r\n0\r\ncontent-length: 3\r\n\r\n`, ours: "200 hello", deliberate: "trailers skipped unread" },
  { name: "NUL in a trailer", raw: `${TE}5\r\nhello\r\n0\r\nx-t: \x00\r\n\r\n`, ours: "refused" },
  { name: "no last chunk", raw: `${TE}5\r\nhello\r\n`, ours: "refused" },
  { name: "obs-fold", raw: `HTTP/1.1 200 OK\r\nx-a: 1\r\n  folded\r\n${HI}`, ours: "refused" },
  { name: "NUL in a header value", raw: `HTTP/1.1 200 OK\r\nx-a: a\x00b\r\n${HI}`, ours: "refused" },
  { name: "NUL in a header name", raw: `HTTP/1.1 200 OK\r\nx-\x00a: ab\r\n${HI}`, ours: "refused" },
  { name: "DEL in a header value", raw: `HTTP/1.1 200 OK\r\nx-a: a\x7fb\r\n${HI}`, ours: "refused" },
  { name: "space before the colon", raw: "HTTP/1.1 200 OK\r\ncontent-length : 2\r\n\r\nhi", ours: "refused" },
  { name: "empty header name", raw: `HTTP/1.1 200 OK\r\n: v\r\n${HI}`, ours: "refused" },
  { name: "obs-text in a value", raw: `HTTP/1.1 200 OK\r\nx-a: caf\xe9\r\n${HI}`, ours: "200 hi" },
  { name: "bare LF line ends", raw: "HTTP/1.1 200 OK\ncontent-length: 2\n\nhi", ours: "refused" },
  { name: "bare CR", raw: "HTTP/1.1 200 OK\rcontent-length: 2\r\n\r\nhi", ours: "refused" },
  { name: "CR CR after the status line", raw: "HTTP/1.1 200 OK\r\rcontent-length: 2\r\n\r\nhi", ours: "refused", deliberate: "a bare CR ends no line" },
  { name: "bare CR in a header line", raw: "HTTP/1.1 200 OK\r\nx-a: 1\rcontent-length: 2\r\n\r\nhi", ours: "refused" },
  { name: "one bare LF among CRLFs", raw: "HTTP/1.1 200 OK\r\ncontent-length: 2\n\r\nhi", ours: "refused" },
  { name: "negative Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length: -2\r\n\r\nhi", ours: "refused" },
  { name: "Content-Length +2", raw: "HTTP/1.1 200 OK\r\ncontent-length: +2\r\n\r\nhi", ours: "refused" },
  { name: "Content-Length past 64 bits", raw: "HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\nhi", ours: "refused" },
  { name: "HTAB after a Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length: 2\t\r\n\r\nhi", ours: "200 hi", deliberate: "HTAB around a value is not part of it" },
  { name: "HTAB after Transfer-Encoding", raw: `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\t\r\n\r\n5\r\nhello\r\n0\r\n\r\n`, ours: "200 hello", deliberate: "HTAB around a value is not part of it" },
  { name: "NBSP after a Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length: 2\xa0\r\n\r\nhi", ours: "refused" },
  { name: "TE with a malformed Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", ours: "200 hello", deliberate: "Transfer-Encoding overrides Content-Length" },
  { name: "Content-Length of 16 digits", raw: "HTTP/1.1 200 OK\r\ncontent-length: 0000000000000002\r\n\r\nhi", ours: "refused", deliberate: "bounded heads, lines and lengths" },
  { name: "empty Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length:\r\n\r\nhi", ours: "refused" },
  { name: "body shorter than Content-Length", raw: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhi", ours: "refused" },
  { name: "bytes after the body", raw: "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\n\r\n", ours: "200 hi" },
  { name: "100, then the reply", raw: `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n${HI}`, ours: "200 hi" },
  { name: "103, then the reply", raw: `HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n${HI}`, ours: "200 hi" },
  { name: "an HTTP/1.0 interim response", raw: "HTTP/1.0 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\n\r\nhi", ours: "200 hi", deliberate: "an interim response ends with its head" },
  { name: "an interim response with framing headers", raw: `HTTP/1.1 100 Continue\r\ntransfer-encoding: gzip\r\n\r\nHTTP/1.1 200 OK\r\n${HI}`, ours: "200 hi" },
  { name: "an interim response with a malformed Content-Length", raw: `HTTP/1.1 100 Continue\r\ncontent-length: 1, 2\r\n\r\nHTTP/1.1 200 OK\r\n${HI}`, ours: "200 hi", deliberate: "an interim response ends with its head" },
  { name: "an unassigned 1xx with framing headers", raw: `HTTP/1.1 113 Soon\r\ntransfer-encoding: gzip\r\n\r\nHTTP/1.1 200 OK\r\n${HI}`, ours: "200 hi", deliberate: "an interim response ends with its head" },
  { name: "101 Switching Protocols", raw: "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n", ours: "refused" },
  { name: "an interim response only", raw: "HTTP/1.1 100 Continue\r\n\r\n", ours: "refused" },
  { name: "204 with a Content-Length and a body", raw: `HTTP/1.1 204 No Content\r\n${HI}`, ours: "204 " },
  { name: "204 with a malformed Content-Length", raw: "HTTP/1.1 204 No Content\r\ncontent-length: 0 x\r\n\r\n", ours: "204 ", deliberate: "no body after 204 or 304" },
  { name: "304 with a body", raw: "HTTP/1.1 304 Not Modified\r\n\r\nhi", ours: "304 " },
  { name: "status 600", raw: `HTTP/1.1 600 X\r\n${HI}`, ours: "refused", deliberate: "a status line first: HTTP/1.x, 100-599, no control bytes" },
  { name: "status 099", raw: `HTTP/1.1 099 X\r\n${HI}`, ours: "refused" },
  { name: "two-digit status", raw: `HTTP/1.1 20 X\r\n${HI}`, ours: "refused" },
  { name: "four-digit status", raw: `HTTP/1.1 2000 X\r\n${HI}`, ours: "refused" },
  { name: "no reason phrase", raw: `HTTP/1.1 200\r\n${HI}`, ours: "200 hi" },
  { name: "HTAB and obs-text in the reason", raw: `HTTP/1.1 200 O\tK \xe9\r\n${HI}`, ours: "200 hi" },
  { name: "a control byte in the reason", raw: `HTTP/1.1 200 O\x01K\r\n${HI}`, ours: "refused", deliberate: "a status line first: HTTP/1.x, 100-599, no control bytes" },
  { name: "HTTP/1.2", raw: `HTTP/1.2 200 OK\r\n${HI}`, ours: "refused" },
  { name: "HTTP/2.0", raw: `HTTP/2.0 200 OK\r\n${HI}`, ours: "refused", deliberate: "a status line first: HTTP/1.x, 100-599, no control bytes" },
  { name: "HTTP/0.9", raw: `HTTP/0.9 200 OK\r\n${HI}`, ours: "refused", deliberate: "a status line first: HTTP/1.x, 100-599, no control bytes" },
  { name: "lower-case http", raw: `http/1.1 200 OK\r\n${HI}`, ours: "refused" },
  { name: "an empty line before the status line", raw: `\r\nHTTP/1.1 200 OK\r\n${HI}`, ours: "refused", deliberate: "a status line first: HTTP/1.x, 100-599, no control bytes" },
  { name: "two spaces before the status", raw: `HTTP/1.1  200 OK\r\n${HI}`, ours: "refused" },
  { name: "a head over 64 KiB", raw: `HTTP/1.1 200 OK\r\nx-a: ${"a".repeat(70_000)}\r\n${HI}`, ours: "refused", deliberate: "bounded heads, lines and lengths" },
  { name: "nothing", raw: "", ours: "refused" },
  { name: "not HTTP", raw: "garbage\r\n\r\n", ours: "refused" },
];

/** The corpus's expectation of the client, from its verdict: "refused", or "<status> <body>". */
const brief = (v: Verdict) => (v.ok ? `${v.status} ${Buffer.from(v.body).toString("latin1")}` : "refused");

describe("the upstream client against llhttp", () => {
  test("every deliberate difference is shown by the corpus", () => {
    const used = new Set(CORPUS.map((c) => c.deliberate).filter(Boolean));
    expect(Object.keys(DELIBERATE).filter((name) => !used.has(name))).toEqual([]);
  });

  test.each(CORPUS.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const r = seeded(c.raw.length);
    const { verdict, split } = await ours(c.raw, r);
    expect(brief(verdict)).toBe(c.ours);
    expect(split).toBeNull();
    // A byte at a time: the head gathered across reads, every chunk line cut everywhere.
    if (c.raw.length < 200) expect(summary(await exchangeVerdict(bytes(c.raw), Array.from({ length: c.raw.length }, (_, i) => i)))).toBe(summary(verdict));
    expect(disagreement(c.raw, verdict, llhttpVerdict(bytes(c.raw)), c.deliberate)).toBeNull();
  });

  test(`${CASES} seeded well-formed responses are read as llhttp reads them, however they are cut`, async () => {
    const problems: string[] = [];
    for (let seed = 1; seed <= CASES; seed++) {
      const r = seeded(seed);
      const raw = wellFormed(r);
      const { verdict, split } = await ours(raw, r);
      const theirs = llhttpVerdict(bytes(raw));
      if (!verdict.ok) problems.push(`seed ${seed}: refused ${refusal(verdict)}: ${JSON.stringify(raw).slice(0, 300)}`);
      // No deliberate difference is allowed here: a well-formed response reads the same.
      if (summary(verdict) !== summary(theirs, true)) problems.push(`seed ${seed}: ${both(raw, verdict, theirs)}`);
      if (split) problems.push(`seed ${seed}: ${split}`);
    }
    expect(problems).toEqual([]);
  });

  test(`${CASES} seeded mutations: the client and llhttp agree, or differ as DELIBERATE says; cutting changes nothing`, async () => {
    const problems: string[] = [];
    for (let seed = 1; seed <= CASES; seed++) {
      const r = seeded(1_000_000 + seed);
      const raw = mutated(r, wellFormed(r));
      const { verdict, split } = await ours(raw, r);
      const wrong = disagreement(raw, verdict, llhttpVerdict(bytes(raw)));
      if (wrong) problems.push(`seed ${1_000_000 + seed}: ${wrong}`);
      if (split) problems.push(`seed ${1_000_000 + seed}: ${split}`);
    }
    expect(problems).toEqual([]);
  });
});
