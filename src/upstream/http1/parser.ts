/**
 * The pure half of the upstream HTTP/1.1 client (client.ts): parsing a response head and decoding
 * a chunked body. Bytes in, values out; no sockets. An upstream is untrusted, so every limit is
 * explicit and every malformed input is a ProtocolError, never a guess.
 */

export class ProtocolError extends Error {}

/** A response head larger than this is refused (real servers send well under 8 KiB). */
export const MAX_HEAD_BYTES = 64 * 1024;
/** A chunk-size line (with extensions) or trailer line longer than this is refused. */
const MAX_LINE_BYTES = 4 * 1024;

export interface ResponseHead {
  status: number;
  /** HTTP/1.1, or 1.0 (whose connections are not kept alive here). */
  http11: boolean;
  /** Lower-case names; repeated headers joined with ", " (set-cookie is of no interest here). */
  headers: Map<string, string>;
  /** Bytes the head took, through the blank line. */
  length: number;
}

/** The index just past the first CRLFCRLF at or after `from`, or -1. */
function headEnd(bytes: Uint8Array, from: number): number {
  for (let i = Math.max(3, from + 3); i < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i - 1] === 13 && bytes[i - 2] === 10 && bytes[i - 3] === 13) return i + 1;
  }
  return -1;
}

const STATUS_LINE = /^HTTP\/1\.([01]) ([1-5]\d\d)(?: [^\x00-\x08\x0a-\x1f\x7f]*)?$/;
/** Control characters other than HTAB have no place in a field value. */
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The optional whitespace around a field value or list element: SP and HTAB only (RFC 9110 §5.6.3). */
const OWS_AROUND = /^[ \t]+|[ \t]+$/g;

/**
 * Parses the head at the start of `bytes`: null while it is incomplete, a ProtocolError when it is
 * malformed or larger than MAX_HEAD_BYTES. `searchFrom`: the length of `bytes` when it was last
 * found incomplete (its end is looked for only in what came since, so a head arriving a byte at a
 * time costs linear time).
 */
export function parseHead(bytes: Uint8Array, searchFrom = 0): ResponseHead | null {
  const end = headEnd(bytes, Math.max(0, searchFrom - 3));
  if (end < 0) {
    if (bytes.length > MAX_HEAD_BYTES) throw new ProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
    return null;
  }
  if (end > MAX_HEAD_BYTES) throw new ProtocolError(`response head over ${MAX_HEAD_BYTES} bytes`);
  const lines = Buffer.from(bytes.buffer, bytes.byteOffset, end - 4).toString("latin1").split("\r\n");
  const status = STATUS_LINE.exec(lines[0]!);
  if (!status) throw new ProtocolError("malformed status line");
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon) : "";
    if (!HEADER_NAME.test(name)) throw new ProtocolError("malformed header line");
    const key = name.toLowerCase();
    // Only SP and HTAB surround a value (String.trim would also take NBSP, VT, FF).
    const value = line.slice(colon + 1).replace(OWS_AROUND, "");
    if (BAD_VALUE.test(value)) throw new ProtocolError("control character in a header value");
    const seen = headers.get(key);
    headers.set(key, seen === undefined ? value : `${seen}, ${value}`);
  }
  return { status: Number(status[2]), http11: status[1] === "1", headers, length: end };
}

/** How a response body is delimited (RFC 9112 §6.3, for a response to a POST). */
export type Framing = { kind: "none" } | { kind: "length"; bytes: number } | { kind: "chunked" } | { kind: "close" };

export function framingOf(head: ResponseHead): Framing {
  if (head.status === 204 || head.status === 304 || (head.status >= 100 && head.status < 200)) return { kind: "none" };
  const te = head.headers.get("transfer-encoding");
  if (te !== undefined) {
    // We send no TE header, so chunked alone is acceptable: another coding (gzip, chunked) would
    // hand the relay bytes it cannot read.
    if (te.toLowerCase() !== "chunked") throw new ProtocolError(`unrequested transfer-encoding ${te}`);
    return { kind: "chunked" };
  }
  const cl = head.headers.get("content-length");
  if (cl === undefined) return { kind: "close" };
  // Repeated identical values ("5, 5") are allowed; differing ones are a smuggling attempt. Only
  // SP and HTAB surround them (String.trim would also take NBSP, making "5\xa0" a length).
  const values = new Set(cl.split(",").map((v) => v.replace(OWS_AROUND, "")));
  const only = values.size === 1 ? [...values][0]! : "";
  if (!/^\d{1,15}$/.test(only)) throw new ProtocolError("invalid content-length");
  const bytes = Number(only);
  return bytes === 0 ? { kind: "none" } : { kind: "length", bytes };
}

/** Where a chunked decoder is between pushes. */
const enum At {
  /** The chunk size's hex digits. */
  Size,
  /** Whitespace after the size: more of it, `;` or CR may follow. */
  SizeWs,
  /** A chunk extension, up to CR. */
  Ext,
  /** The LF after the size line's CR. */
  SizeLf,
  Data,
  /** The CR after a chunk's data. */
  DataCr,
  DataLf,
  /** The start of a trailer line (an empty one ends the body). */
  TrailerStart,
  /** Inside a trailer line, up to CR. */
  Trailer,
  TrailerLf,
  /** The LF of the empty line that ends the body. */
  EndLf,
}

/**
 * Views of one buffer, in order (the data pieces ChunkedDecoder.push found in it), as one view:
 * their bytes are moved down to where the first starts, over the chunk lines between them. No
 * copy is made, so the buffer is overwritten: only for a buffer nothing else reads.
 */
export function joinInPlace(pieces: Uint8Array[]): Uint8Array {
  const first = pieces[0]!;
  let end = first.byteOffset + first.byteLength;
  const whole = new Uint8Array(first.buffer);
  for (let i = 1; i < pieces.length; i++) {
    const p = pieces[i]!;
    whole.copyWithin(end, p.byteOffset, p.byteOffset + p.byteLength);
    end += p.byteLength;
  }
  return whole.subarray(first.byteOffset, end);
}

/** A control byte other than HTAB (CR is handled before this is asked). */
const isControl = (b: number): boolean => (b < 32 && b !== 9) || b === 127;

const hexValue = (b: number): number => (b >= 48 && b <= 57 ? b - 48 : b >= 97 && b <= 102 ? b - 87 : b >= 65 && b <= 70 ? b - 55 : -1);

/**
 * Decodes a chunked body incrementally, byte by byte outside the data (a stream of small chunks
 * must not cost a string per chunk). `push` returns the data pieces found in `bytes` (views of it,
 * no copies); `done` is set once the last chunk and its trailers have been read, and `rest` then
 * holds any bytes that followed them.
 */
export class ChunkedDecoder {
  private at = At.Size;
  /** Bytes of the current data chunk still to come (while reading the size: its value so far). */
  private remaining = 0;
  private sizeDigits = 0;
  /** Bytes of the current size or trailer line so far. */
  private lineBytes = 0;
  done = false;
  rest: Uint8Array | null = null;

  push(bytes: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    const n = bytes.length;
    let i = 0;
    while (i < n && !this.done) {
      if (this.at === At.Data) {
        const take = Math.min(this.remaining, n - i);
        out.push(bytes.subarray(i, i + take));
        i += take;
        this.remaining -= take;
        if (this.remaining === 0) this.at = At.DataCr;
        continue;
      }
      const b = bytes[i++]!;
      if (++this.lineBytes > MAX_LINE_BYTES) throw new ProtocolError("chunk line too long");
      switch (this.at) {
        case At.Size: {
          const v = hexValue(b);
          if (v >= 0) {
            if (++this.sizeDigits > 12) throw new ProtocolError("invalid chunk size");
            this.remaining = this.remaining * 16 + v;
          } else if (this.sizeDigits === 0) throw new ProtocolError("invalid chunk size");
          else if (b === 13) this.at = At.SizeLf;
          else if (b === 59) this.at = At.Ext;
          else if (b === 32 || b === 9) this.at = At.SizeWs;
          else throw new ProtocolError("invalid chunk size");
          break;
        }
        case At.SizeWs:
          if (b === 13) this.at = At.SizeLf;
          else if (b === 59) this.at = At.Ext;
          else if (b !== 32 && b !== 9) throw new ProtocolError("invalid chunk size");
          break;
        case At.Ext:
          if (b === 13) this.at = At.SizeLf;
          else if (isControl(b)) throw new ProtocolError("control character in a chunk extension");
          break;
        case At.SizeLf:
          if (b !== 10) throw new ProtocolError("chunk line not ended by CRLF");
          this.lineBytes = 0;
          this.sizeDigits = 0;
          this.at = this.remaining === 0 ? At.TrailerStart : At.Data;
          break;
        case At.DataCr:
          if (b !== 13) throw new ProtocolError("chunk data longer than its size");
          this.at = At.DataLf;
          break;
        case At.DataLf:
          if (b !== 10) throw new ProtocolError("chunk data longer than its size");
          this.lineBytes = 0;
          this.at = At.Size;
          break;
        case At.TrailerStart:
          this.at = b === 13 ? At.EndLf : isControl(b) ? this.fail() : At.Trailer;
          break;
        case At.Trailer:
          if (b === 13) this.at = At.TrailerLf;
          else if (isControl(b)) this.fail();
          break;
        case At.TrailerLf:
          if (b !== 10) this.fail();
          this.lineBytes = 0;
          this.at = At.TrailerStart;
          break;
        case At.EndLf:
          if (b !== 10) this.fail();
          this.done = true;
          break;
      }
    }
    if (this.done && i < n) this.rest = bytes.subarray(i);
    return out;
  }

  private fail(): never {
    throw new ProtocolError("malformed chunk trailer");
  }
}
