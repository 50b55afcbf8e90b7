import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "./config";

describe("stream and hold bounds", () => {
  test("defaults: 1 MiB lines and events, 15-minute streams, holds expire 5 minutes after that", () => {
    const c = loadConfig({});
    expect([c.sseMaxLineChars, c.sseMaxEventChars, c.streamMaxSeconds, c.holdExpirySeconds]).toEqual([1024 * 1024, 1024 * 1024, 900, 1200]);
    // The expiry follows a changed stream bound.
    expect(loadConfig({ SWITCHYARD_STREAM_MAX_SECONDS: "60" }).holdExpirySeconds).toBe(360);
  });
  test("a hold may not expire before the longest stream ends (plus a minute)", () => {
    expect(() => loadConfig({ SWITCHYARD_STREAM_MAX_SECONDS: "600", SWITCHYARD_HOLD_EXPIRY_SECONDS: "620" })).toThrow(
      new ConfigError("SWITCHYARD_HOLD_EXPIRY_SECONDS", "must be at least SWITCHYARD_STREAM_MAX_SECONDS + 60 (660), got 620"),
    );
    expect(loadConfig({ SWITCHYARD_STREAM_MAX_SECONDS: "600", SWITCHYARD_HOLD_EXPIRY_SECONDS: "660" }).holdExpirySeconds).toBe(660);
  });
  test.each(["SWITCHYARD_SSE_MAX_LINE_CHARS", "SWITCHYARD_SSE_MAX_EVENT_CHARS", "SWITCHYARD_STREAM_MAX_SECONDS"])("%s: a whole number in range, named when not", (name) => {
    expect(() => loadConfig({ [name]: "0" })).toThrow(name);
    expect(() => loadConfig({ [name]: "ten" })).toThrow(name);
  });
});
