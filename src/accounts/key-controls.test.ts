import { describe, expect, test } from "bun:test";
import type { KeyOwner } from "./api-keys";
import { controlsInWords, controlsOf, expiredAt, managesKeys } from "./key-controls";

const NONE: KeyOwner["key"] = { spendLimit: null, limitReset: null, expiresAt: null, models: null, rateLimitRpm: null };

describe("a key's controls and what they allow in the dashboard", () => {
  test("a key without controls manages its account's keys; any one control makes it an inference key", () => {
    expect(controlsOf(NONE)).toEqual([]);
    expect(managesKeys(NONE)).toBe(true);
    // A reset without a limit limits nothing.
    expect(managesKeys({ ...NONE, limitReset: "daily" })).toBe(true);
    const one: [Partial<KeyOwner["key"]>, string][] = [
      [{ spendLimit: 0 }, "limit"],
      [{ expiresAt: 4_102_444_800 }, "expires_at"],
      [{ models: ["glm-4.6"] }, "models"],
      [{ rateLimitRpm: 60 }, "rate_limit_rpm"],
    ];
    for (const [control, name] of one) {
      expect(controlsOf({ ...NONE, ...control })).toEqual([name as never]);
      expect(managesKeys({ ...NONE, ...control })).toBe(false);
    }
  });

  test("controls in words, for the 403's message", () => {
    expect(controlsInWords(["models"])).toBe("a model list");
    expect(controlsInWords(["limit", "rate_limit_rpm"])).toBe("a spend limit and a rate limit");
    expect(controlsInWords(["limit", "expires_at", "models", "rate_limit_rpm"])).toBe("a spend limit, an expiry, a model list and a rate limit");
  });

  test("expired from its expiry second on, never without one", () => {
    const key = { ...NONE, expiresAt: 1_000 };
    expect(expiredAt(key, 999_999)).toBeNull();
    expect(expiredAt(key, 1_000_000)).toBe(1_000_000);
    expect(expiredAt(NONE, Number.MAX_SAFE_INTEGER)).toBeNull();
  });
});
