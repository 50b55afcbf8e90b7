import { describe, expect, test } from "bun:test";
import { ChunkedDecoder, framingOf, joinInPlace, MAX_HEAD_BYTES, parseHead, ProtocolError } from "./parser";

const bytes = (s: string) => new Uint8Array(Buffer.from(s, "latin1"));
const text = (parts: Uint8Array[]) => parts.map((p) => Buffer.from(p).toString("latin1")).join("");

describe("parseHead", () => {
  test("status, lower-cased and joined headers, and the head's length", () => {
    const raw = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nX-A: 1\r\nx-a: 2\r\n\r\nbody";
    const head = parseHead(bytes(raw))!;
    expect(head.status).toBe(429);
    expect(head.headers.get("retry-after")).toBe("3");
    expect(head.headers.get("x-a")).toBe("1, 2");
    expect(head.length).toBe(raw.length - 4);
  });

  test("HTTP/1.0 and an empty reason are accepted, and told apart from 1.1", () => {
    const head = parseHead(bytes("HTTP/1.0 200\r\n\r\n"))!;
    expect(head.status).toBe(200);
    expect(head.http11).toBe(false);
    expect(parseHead(bytes("HTTP/1.1 200 OK\r\n\r\n"))!.http11).toBe(true);
  });

  test("values lose surrounding SP and HTAB only", () => {
    expect(parseHead(bytes("HTTP/1.1 200 OK\r\nx: \t a b\t \r\n\r\n"))!.headers.get("x")).toBe("a b");
    expect(parseHead(bytes("HTTP/1.1 200 OK\r\ncontent-length: 2\xa0\r\n\r\n"))!.headers.get("content-length")).toBe("2\xa0");
  });

  test("a head gathered piece by piece is found when its end spans two pieces", () => {
    const raw = bytes("HTTP/1.1 200 OK\r\nx: 1\r\n\r\n");
    for (let cut = 1; cut < raw.length; cut++) {
      expect(parseHead(raw.subarray(0, cut))).toBeNull();
      expect(parseHead(raw, cut)!.headers.get("x")).toBe("1");
    }
  });

  test("an incomplete head is null until it exceeds the limit", () => {
    expect(parseHead(bytes("HTTP/1.1 200 OK\r\ncontent-"))).toBeNull();
    expect(() => parseHead(bytes(`HTTP/1.1 200 OK\r\nx: ${"a".repeat(MAX_HEAD_BYTES)}`))).toThrow(ProtocolError);
  });

  test.each([
    "HTTP/2 200 OK\r\n\r\n",
    "HTTP/1.1 20 OK\r\n\r\n",
    "HTTP/1.1 099 Low\r\n\r\n",
    "HTTP/1.1 600 High\r\n\r\n",
    "ICY 200 OK\r\n\r\n",
    "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
    "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n",
    "HTTP/1.1 200 OK\r\nx: a\x00b\r\n\r\n",
    "HTTP/1.1 200 OK\r\nx: a\nb\r\n\r\n",
  ])(
    "%j is malformed",
    (raw) => expect(() => parseHead(bytes(raw))).toThrow(ProtocolError),
  );
});

describe("framingOf", () => {
  const head = (status: number, headers: Record<string, string>) => ({ status, http11: true, headers: new Map(Object.entries(headers)), length: 0 });
  test.each([
    [200, { "content-length": "12" }, { kind: "length", bytes: 12 }],
    [200, { "content-length": "12, 12" }, { kind: "length", bytes: 12 }],
    [200, { "content-length": "0" }, { kind: "none" }],
    [200, { "transfer-encoding": "chunked", "content-length": "5" }, { kind: "chunked" }],
    [200, { "transfer-encoding": "Chunked" }, { kind: "chunked" }],
    [200, {}, { kind: "close" }],
    [204, { "content-length": "5" }, { kind: "none" }],
    [304, {}, { kind: "none" }],
  ] as const)("%d %j → %j", (status, headers, framing) => {
    expect(framingOf(head(status, headers))).toEqual(framing);
  });

  // Only SP and HTAB surround a value (RFC 9110 §5.5): NBSP (or any other space String.trim
  // knows) next to the digits makes a length llhttp refuses, and another parser may read as none.
  test.each(["5, 6", "-1", "0x10", "1e3", "", "2\xa0", "\xa02", "2\xa0, 2", "2, \xa02"])("content-length %j is refused", (cl) => {
    expect(() => framingOf(head(200, { "content-length": cl }))).toThrow(ProtocolError);
  });

  // We send no TE header: a coding besides chunked would reach the relay still encoded.
  test.each(["gzip, chunked", "chunked, gzip", "identity", "gzip"])("transfer-encoding %j is refused", (te) => {
    expect(() => framingOf(head(200, { "transfer-encoding": te }))).toThrow(ProtocolError);
  });
});

describe("ChunkedDecoder", () => {
  const body = "4\r\nWiki\r\n6;name=value\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\nNEXT";

  test("the pieces of one read joined in place: the data in order, over the chunk lines, the bytes after the end untouched", () => {
    const raw = bytes(body);
    const d = new ChunkedDecoder();
    const joined = joinInPlace(d.push(raw));
    expect(Buffer.from(joined).toString("latin1")).toBe("Wikipedia in \r\n\r\nchunks.");
    // A view of the read itself, from where its first piece was: nothing was copied.
    expect(joined.buffer).toBe(raw.buffer);
    expect(joined.byteOffset).toBe(3);
    expect(text([d.rest!])).toBe("NEXT");
    // Within a larger buffer (a read after a response head), only its own region is written.
    const framed = bytes("HEAD" + body);
    const inner = framed.subarray(4);
    const again = joinInPlace(new ChunkedDecoder().push(inner));
    expect(Buffer.from(again).toString("latin1")).toBe("Wikipedia in \r\n\r\nchunks.");
    expect(Buffer.from(framed.subarray(0, 4)).toString("latin1")).toBe("HEAD");
  });

  test("whitespace before an extension or the line's end is allowed", () => {
    const d = new ChunkedDecoder();
    expect(text(d.push(bytes("2 \t;a=b\r\nhi\r\n3\t\r\nyou\r\n0\r\n\r\n")))).toBe("hiyou");
    expect(d.done).toBe(true);
  });

  test("whole, and fed one byte at a time, it decodes the same; the bytes after the end are kept", () => {
    const whole = new ChunkedDecoder();
    expect(text(whole.push(bytes(body)))).toBe("Wikipedia in \r\n\r\nchunks.");
    expect(whole.done).toBe(true);
    expect(text([whole.rest!])).toBe("NEXT");

    const bytewise = new ChunkedDecoder();
    const parts: Uint8Array[] = [];
    for (const ch of body.slice(0, -4)) parts.push(...bytewise.push(bytes(ch)));
    expect(text(parts)).toBe("Wikipedia in \r\n\r\nchunks.");
    expect(bytewise.done).toBe(true);
    expect(bytewise.rest).toBeNull();
  });

  test.each([
    ["a size that is not hex", "xyz\r\n"],
    ["a size line ended by a bare LF", "4\nWiki\r\n"],
    ["data longer than its size", "2\r\nWiki\r\n"],
    ["an endless size line", "1".repeat(5_000)],
    ["a size beyond 12 hex digits", "1000000000000\r\n"],
    ["a second number after the size", "2 ff\r\nhi\r\n"],
    ["a control byte in an extension", "2;a=\x01\r\nhi\r\n"],
    ["a control byte in a trailer", "0\r\nx: \x00\r\n\r\n"],
  ])("%s is a ProtocolError", (_name, raw) => {
    expect(() => new ChunkedDecoder().push(bytes(raw))).toThrow(ProtocolError);
  });
});
