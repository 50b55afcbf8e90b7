import { describe, expect, test } from "bun:test";
import { newRequestId } from "./request-context";

describe("newRequestId", () => {
  test("is req_ + 9 base-36 time digits + 14 base64url random characters", () => {
    expect(newRequestId()).toMatch(/^req_[0-9a-z]{9}[A-Za-z0-9_-]{14}$/);
  });

  test.each([
    [0, 1],
    [1_700_000_000_000, 1_700_000_000_001],
    [1_799_999_999_999, 1_800_000_000_000],
  ])("an id made at %p ms sorts before one made at %p ms", (earlier, later) => {
    expect(newRequestId(earlier) < newRequestId(later)).toBe(true);
  });

  test("ids made in the same millisecond still differ", () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newRequestId(1_700_000_000_000)));
    expect(ids.size).toBe(10_000);
  });
});
