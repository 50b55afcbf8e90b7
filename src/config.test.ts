/** The upstream settings of loadConfig: defaults, bounds, and the upstream key as a header value. */
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "./config";

const base = { SWITCHYARD_DATA_DIR: "/tmp/switchyard-config-test" };
const load = (env: Record<string, string>) => loadConfig({ ...base, ...env });
const errorOf = (env: Record<string, string>): ConfigError => {
  try {
    load(env);
  } catch (e) {
    return e as ConfigError;
  }
  throw new Error("should have thrown");
};

describe("upstream settings", () => {
  test("defaults: keep-alive on, pooled per account, 64 idle per origin, 256 in all, 32 MiB replies", () => {
    const c = load({});
    expect(c.upstreamKeepAlive).toBe(true);
    expect(c.upstreamPoolScope).toBe("account");
    expect(c.upstreamMaxIdlePerOrigin).toBe(64);
    expect(c.upstreamMaxIdle).toBe(256);
    expect(c.upstreamReceiveBufferKib).toBe(32);
    expect(c.upstreamMaxResponseBytes).toBe(32 * 1024 * 1024);
  });

  test("set", () => {
    const c = load({
      SWITCHYARD_UPSTREAM_KEEP_ALIVE: "off",
      SWITCHYARD_UPSTREAM_POOL_SCOPE: "shared",
      SWITCHYARD_UPSTREAM_MAX_IDLE_PER_ORIGIN: "0",
      SWITCHYARD_UPSTREAM_MAX_IDLE: "10",
      SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES: "65536",
      SWITCHYARD_UPSTREAM_RECEIVE_BUFFER_KIB: "0",
    });
    expect([c.upstreamKeepAlive, c.upstreamPoolScope, c.upstreamMaxIdlePerOrigin, c.upstreamMaxIdle, c.upstreamMaxResponseBytes, c.upstreamReceiveBufferKib]).toEqual([false, "shared", 0, 10, 65536, 0]);
  });

  test.each([
    ["SWITCHYARD_UPSTREAM_KEEP_ALIVE", "maybe", /must be one of on, off/],
    ["SWITCHYARD_UPSTREAM_POOL_SCOPE", "tenant", /must be one of account, shared/],
    ["SWITCHYARD_UPSTREAM_MAX_IDLE_PER_ORIGIN", "-1", /whole number/],
    ["SWITCHYARD_UPSTREAM_MAX_IDLE", "lots", /whole number/],
    ["SWITCHYARD_UPSTREAM_RECEIVE_BUFFER_KIB", "64k", /whole number/],
    ["SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES", "100", /from 1024 to/],
  ])("%s=%s → ConfigError naming the variable", (name, value, rule) => {
    const err = errorOf({ [name]: value });
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.variable).toBe(name);
    expect(err.message).toMatch(rule);
  });

  test("SWITCHYARD_UPSTREAM_KEY: surrounding whitespace and a trailing newline are trimmed", () => {
    expect(load({ SWITCHYARD_UPSTREAM_KEY: "  sk-abc\r\n" }).upstreamKey).toBe("sk-abc");
  });

  test.each([["a LF", "sk-sec\nret"], ["a CR", "sk-sec\rret"], ["a NUL", "sk-sec\u0000ret"], ["a character past latin-1", "sk-sec\u2028ret"]])(
    "SWITCHYARD_UPSTREAM_KEY with %s inside → ConfigError naming the variable and the rule, not the key",
    (_name, key) => {
      const err = errorOf({ SWITCHYARD_UPSTREAM_KEY: key });
      expect(err.variable).toBe("SWITCHYARD_UPSTREAM_KEY");
      expect(err.message).toContain("must not contain control characters");
      expect(err.message).not.toContain("sec");
    },
  );
});

test("stored-response retention, quota and the stop grace period: defaults", () => {
  const c = loadConfig({});
  expect(c.responsesRetentionSeconds).toBe(30 * 86_400);
  expect(c.responsesQuotaBytes).toBe(100 * 1024 * 1024);
  expect(c.shutdownGraceMs).toBe(30_000);
});

test.each([
  ["SWITCHYARD_RESPONSES_RETENTION_DAYS", "0"],
  ["SWITCHYARD_RESPONSES_RETENTION_DAYS", "thirty"],
  ["SWITCHYARD_RESPONSES_QUOTA_BYTES", "10"],
  ["SWITCHYARD_SHUTDOWN_GRACE_SECONDS", "-1"],
  ["SWITCHYARD_SHUTDOWN_GRACE_SECONDS", "3601"],
])("%s=%s is refused naming the variable", (name, value) => {
  let err: unknown;
  try {
    loadConfig({ [name]: value });
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  expect((err as ConfigError).variable).toBe(name);
});

test("set values are taken", () => {
  const c = loadConfig({ SWITCHYARD_RESPONSES_RETENTION_DAYS: "7", SWITCHYARD_RESPONSES_QUOTA_BYTES: "2048", SWITCHYARD_SHUTDOWN_GRACE_SECONDS: "0" });
  expect([c.responsesRetentionSeconds, c.responsesQuotaBytes, c.shutdownGraceMs]).toEqual([7 * 86_400, 2048, 0]);
});

test("SWITCHYARD_PUBLIC_URL: unset by default; an origin (a trailing / or /v1 dropped); anything else names the variable", () => {
  expect(loadConfig({}).publicUrl).toBeNull();
  expect(loadConfig({ SWITCHYARD_PUBLIC_URL: "https://api.example.com/" }).publicUrl).toBe("https://api.example.com");
  expect(loadConfig({ SWITCHYARD_PUBLIC_URL: "https://example.com/llm/v1" }).publicUrl).toBe("https://example.com/llm");
  for (const bad of ["api.example.com", "ftp://example.com", "https://example.com/?x=1", "https://user:pw@example.com"]) {
    let err: unknown = null;
    try {
      loadConfig({ SWITCHYARD_PUBLIC_URL: bad });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe("SWITCHYARD_PUBLIC_URL");
    expect((err as ConfigError).message).not.toContain("pw@");
  }
});

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
  test("SWITCHYARD_STREAM_GC_MIB: off by default, a whole number of MiB from 0 to 1024, named when not", () => {
    expect(loadConfig({}).streamGcMib).toBe(0);
    expect(loadConfig({ SWITCHYARD_STREAM_GC_MIB: "8" }).streamGcMib).toBe(8);
    for (const bad of ["-1", "1025", "eight", "1.5"]) expect(() => loadConfig({ SWITCHYARD_STREAM_GC_MIB: bad })).toThrow("SWITCHYARD_STREAM_GC_MIB");
  });
});

test("SWITCHYARD_TOKEN_BACKGROUND_PERCENT: half a core by default, 1 to 100, named when not", () => {
  expect(load({}).tokenBackgroundPercent).toBe(50);
  expect(load({ SWITCHYARD_TOKEN_BACKGROUND_PERCENT: "100" }).tokenBackgroundPercent).toBe(100);
  for (const bad of ["0", "101", "half"]) expect(errorOf({ SWITCHYARD_TOKEN_BACKGROUND_PERCENT: bad }).message).toContain("SWITCHYARD_TOKEN_BACKGROUND_PERCENT");
});
