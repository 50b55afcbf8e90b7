import { expect, test } from "bun:test";
import { amounts, usd } from "./format";
import { guardIntl } from "./intl-guard";

test.each([
  [4.9999802, "$5.00"],
  [25, "$25.00"],
  [1234567.891, "$1,234,567.89"],
  [1, "$1.00"],
  [0.5, "$0.50"],
  [0.123456789, "$0.123457"],
  [0.0000198, "$0.0000198"],
  [0.000123, "$0.000123"],
  [8e-8, "$0.00000008"],
  [0.000000001, "$0.000000001"],
  [0.999999999, "$1.00"],
  [0, "$0.00"],
  [-12.5, "−$12.50"],
  [-0.0000074, "−$0.0000074"],
  [null, "—"],
  [undefined, "—"],
])("usd(%p) = %p", (n, text) => {
  expect(usd(n)).toBe(text);
});

test("a language tag Intl rejects falls back to en-US; bad options still throw", () => {
  const original = { NumberFormat: Intl.NumberFormat, DateTimeFormat: Intl.DateTimeFormat };
  const fake = { Intl: { ...Intl, NumberFormat: Intl.NumberFormat, DateTimeFormat: Intl.DateTimeFormat } as typeof Intl };
  expect(() => new fake.Intl.NumberFormat("en-US@posix")).toThrow(RangeError);
  guardIntl(fake);
  expect(new fake.Intl.NumberFormat("en-US@posix").format(1234.5)).toBe("1,234.5");
  expect(new fake.Intl.NumberFormat("en-US@posix")).toBeInstanceOf(original.NumberFormat);
  expect(new fake.Intl.DateTimeFormat("en-US@posix", { timeZone: "UTC", year: "numeric" }).format(new Date(0))).toBe("1970");
  expect(new fake.Intl.NumberFormat("de-DE").format(1234.5)).toBe("1.234,5");
  expect(() => new fake.Intl.NumberFormat("en-US@posix", { style: "currency", currency: "not a currency" })).toThrow(RangeError);
  expect(fake.Intl.NumberFormat.supportedLocalesOf(["en-US"])).toEqual(["en-US"]);
  // The real Intl is untouched by a guard on another object.
  expect(Intl.NumberFormat).toBe(original.NumberFormat);
});

test("amounts: the prompt's cached and written tokens beside it, only where there are any", () => {
  expect(amounts({ tokens_prompt: 10_000, tokens_completion: 100 })).toBe("10,000 in / 100 out");
  expect(amounts({ tokens_prompt: 10_000, tokens_completion: 100, tokens_cached: 8_000, tokens_cache_write: 0 })).toBe("10,000 in (8,000 cached) / 100 out");
  expect(amounts({ tokens_prompt: 10_000, tokens_completion: 100, tokens_cached: 6_000, tokens_cache_write: 2_000 })).toBe("10,000 in (6,000 cached, 2,000 written) / 100 out");
  expect(amounts({ characters: 42 })).toBe("42 chars");
});
