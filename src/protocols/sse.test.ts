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
  test("framing", () => {
    expect(new TextDecoder().decode(sseData({ a: 1 }))).toBe('data: {"a":1}\n\n');
    expect(new TextDecoder().decode(sseEvent("ping", { type: "ping" }))).toBe('event: ping\ndata: {"type":"ping"}\n\n');
  });
});
