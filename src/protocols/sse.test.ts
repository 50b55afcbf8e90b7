import { describe, expect, test } from "bun:test";
import { SseLimitExceeded, SseParser, sseData, sseEvent } from "./sse";

describe("SseParser", () => {
  test("events split across chunks, CRLF, comments and named events", () => {
    const p = new SseParser();
    const out = [
      ...p.push('data: {"a"'),
      ...p.push(':1}\r\n\r\n: ping\n\nevent: message_start\ndata: x\n'),
      ...p.push("data: y\n\ndata: [DONE]\n\n"),
    ];
    expect(out).toEqual([
      { event: null, data: '{"a":1}' },
      { event: "message_start", data: "x\ny" },
      { event: null, data: "[DONE]" },
    ]);
  });
  test("a trailing event without a blank line is flushed at end()", () => {
    const p = new SseParser();
    expect(p.push("data: tail")).toEqual([]);
    expect(p.end()).toEqual([{ event: null, data: "tail" }]);
  });
  test.each([
    ["plain data events", 'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n'],
    ["CRLF everywhere", 'data: {"a":1}\r\n\r\ndata: x\r\n\r\n'],
    ["mixed: named, multi-line, comment, empty data", "event: e\ndata: 1\n\ndata: a\ndata: b\n\n: hi\n\ndata: \n\ndata:nospace\n\ndata:  two\n\n"],
    ["a blank line that is CRLF after LF", "data: x\n\r\ndata: y\n\n"],
  ])("%s: the same events however the bytes are split", (_name, text) => {
    const whole = new SseParser();
    const expected = [...whole.push(text), ...whole.end()];
    const bytes = new TextEncoder().encode(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      for (const second of [cut, Math.min(bytes.length, cut + 3)]) {
        const p = new SseParser();
        const got = [...p.push(bytes.slice(0, cut)), ...p.push(bytes.slice(cut, second)), ...p.push(bytes.slice(second)), ...p.end()];
        expect(got).toEqual(expected);
      }
    }
  });
  test("framing", () => {
    expect(sseData({ a: 1 })).toBe('data: {"a":1}\n\n');
    expect(sseEvent("ping", { type: "ping" })).toBe('event: ping\ndata: {"type":"ping"}\n\n');
  });

  describe("bounds and linear scanning", () => {
    const piece = "x".repeat(16 * 1024);
    test("a line that never ends is searched once: work grows with the input, not with its square", () => {
      const p = new SseParser({ maxLineChars: 64 * 1024 * 1024, maxEventChars: 64 * 1024 * 1024 });
      let sent = 0;
      expect(p.push('data: {"a":"')).toEqual([]);
      sent += 12;
      for (let i = 0; i < 512; i++) {
        expect(p.push(piece)).toEqual([]);
        sent += piece.length;
      }
      // 8 MiB without a newline: every character after the matched "data: " searched exactly once.
      expect(p.scanned).toBe(sent - 6);
      expect(p.push('"}\n\n')).toEqual([{ event: null, data: '{"a":"' + piece.repeat(512) + '"}' }]);
      expect(p.scanned).toBeLessThanOrEqual(sent + 4);
    });
    test("many small events split across reads: each character searched at most once", () => {
      const p = new SseParser();
      const text = 'data: {"a":1}\n\nevent: e\r\ndata: 2\r\n\r\n: ping\n\n'.repeat(2000);
      let events = 0;
      for (let i = 0; i < text.length; i += 7) events += p.push(text.slice(i, i + 7)).length;
      expect(events).toBe(4000);
      expect(p.scanned).toBeLessThanOrEqual(text.length);
    });
    test("a line over the bound stops the parser; the events before it are kept", () => {
      const p = new SseParser({ maxLineChars: 1000 });
      expect(p.push('data: {"ok":1}\n\ndata: {"a":"')).toEqual([{ event: null, data: '{"ok":1}' }]);
      expect(p.error).toBeNull();
      expect(p.push("y".repeat(990))).toEqual([]);
      expect(p.error).toBeInstanceOf(SseLimitExceeded);
      expect(p.error!.bound).toBe("line");
      // Nothing more is taken or kept.
      expect(p.push('"}\n\n')).toEqual([]);
      expect(p.end()).toEqual([]);
    });
    test("a line over the bound that arrives whole in one read", () => {
      const p = new SseParser({ maxLineChars: 100 });
      expect(p.push(`data: ${"z".repeat(200)}\n\n`)).toEqual([]);
      expect(p.error?.bound).toBe("line");
    });
    test("a line at the bound is accepted", () => {
      const p = new SseParser({ maxLineChars: 100, maxEventChars: 1000 });
      const data = "z".repeat(94);
      expect(p.push(`data: ${data.slice(0, 50)}`)).toEqual([]);
      expect(p.push(`${data.slice(50)}\r\n\r\n`)).toEqual([{ event: null, data }]);
      expect(p.error).toBeNull();
    });
    test("data lines without the blank line that ends an event stop at the event bound", () => {
      const p = new SseParser({ maxEventChars: 10_000 });
      let events = 0;
      for (let i = 0; i < 1000 && !p.error; i++) events += p.push("data: " + "d".repeat(100) + "\n").length;
      expect(events).toBe(0);
      expect(p.error?.bound).toBe("event");
    });
    test("an event at its bound is accepted", () => {
      const p = new SseParser({ maxEventChars: 9 });
      expect(p.push("data: abcd\ndata: efgh\n\n")).toEqual([{ event: null, data: "abcd\nefgh" }]);
      const q = new SseParser({ maxEventChars: 9 });
      expect(q.push("data: 0123456789\n\n")).toEqual([]);
      expect(q.error?.bound).toBe("event");
    });
    test("comments repeated without end grow nothing", () => {
      const p = new SseParser({ maxLineChars: 100, maxEventChars: 100 });
      for (let i = 0; i < 10_000; i++) expect(p.push(": ping\n\n")).toEqual([]);
      expect(p.error).toBeNull();
    });
  });
});

describe("what a parser keeps between reads", () => {
  test("the unfinished line is kept on its own, not as a slice holding the whole read's text", () => {
    // Each parser is fed one 1 MiB read whose last line is unfinished: a slice of the decoded
    // read kept all of it alive (a slice shares its string's characters) while the relay waited
    // for its client; 40 such streams held 40 MiB.
    const { heapStats } = require("bun:jsc") as typeof import("bun:jsc");
    const event = `data: ${JSON.stringify({ choices: [{ delta: { content: "x".repeat(1000) } }] })}\n\n`;
    const read = new TextEncoder().encode(event.repeat(Math.ceil((1 << 20) / event.length)) + 'data: {"choices":[{"delta":{"content":"unfinish');
    Bun.gc(true);
    const before = heapStats().extraMemorySize;
    const parsers: SseParser[] = [];
    for (let i = 0; i < 40; i++) {
      const p = new SseParser();
      expect(p.push(read).length).toBeGreaterThan(900);
      parsers.push(p);
    }
    Bun.gc(true);
    const kept = heapStats().extraMemorySize - before;
    expect(kept).toBeLessThan(4 << 20);
    // The kept line still completes.
    expect(parsers[0]!.push(new TextEncoder().encode('ed"}}]}\n\n'))).toEqual([{ event: null, data: '{"choices":[{"delta":{"content":"unfinished"}}]}' }]);
  });
});
