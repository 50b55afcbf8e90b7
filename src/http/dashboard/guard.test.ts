import { expect, test } from "bun:test";
import type { KeyOwner } from "../../accounts/api-keys";
import { sessionEndReason } from "./guard";

const owner = (over: Partial<KeyOwner> = {}, key: Partial<KeyOwner["key"]> = {}): KeyOwner => ({
  keyId: "key_1", accountId: "acct_1", disabled: false, rateLimitRpm: null, concurrencyLimit: null,
  key: { spendLimit: null, limitReset: null, expiresAt: null, models: null, rateLimitRpm: null, ...key },
  ...over,
});

test("an account session ends when its key is gone or another account's, its account disabled, or its key expired", () => {
  const now = 2_000_000;
  expect(sessionEndReason(owner(), "acct_1", now)).toBeNull();
  expect(sessionEndReason(owner({}, { expiresAt: 2_001, spendLimit: 5 }), "acct_1", now)).toBeNull();
  expect(sessionEndReason(null, "acct_1", now)).toContain("revoked");
  expect(sessionEndReason(owner({ accountId: "acct_2" }), "acct_1", now)).toContain("revoked");
  expect(sessionEndReason(owner({ disabled: true }), "acct_1", now)).toContain("disabled");
  expect(sessionEndReason(owner({}, { expiresAt: 2_000 }), "acct_1", now)).toBe(
    "The API key this session signed in with expired at 1970-01-01T00:33:20.000Z; the session has ended. Sign in with another key.",
  );
});
