import { expect, test } from "bun:test";
import { SseFrames } from "./sse-frames";
import { sseData, sseEvents } from "./sse";

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8");

test("the same bytes as the framed strings joined, in a buffer of their own", () => {
  const f = new SseFrames();
  const payload = { a: "é ✓ 𝄞 \u2028", b: [1, 2] };
  f.data(JSON.stringify(payload));
  f.events([{ event: "ping", data: { type: "ping" } }, { event: "x", data: "y" }]);
  f.data("[DONE]");
  const bytes = f.take();
  expect(text(bytes)).toBe(sseData(payload) + sseEvents([{ event: "ping", data: { type: "ping" } }, { event: "x", data: "y" }]) + "data: [DONE]\n\n");
  // Exactly as long as its UTF-8, and the whole of its ArrayBuffer (a relay may free it).
  expect(bytes.byteLength).toBe(Buffer.byteLength(text(bytes), "utf8"));
  expect(bytes.byteOffset).toBe(0);
  expect(bytes.buffer.byteLength).toBe(bytes.byteLength);
});

test("take empties it", () => {
  const f = new SseFrames();
  expect(f.empty).toBe(true);
  expect(f.take().byteLength).toBe(0);
  f.data("1");
  expect(f.empty).toBe(false);
  expect(text(f.take())).toBe("data: 1\n\n");
  expect(f.empty).toBe(true);
  expect(f.take().byteLength).toBe(0);
});
