import { describe, expect, test } from "bun:test";
import { SseParser, sseData, sseEvent } from "./sse";

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
});
