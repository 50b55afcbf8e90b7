import { describe, expect, test } from "bun:test";
import { cost, formatUsd, MAX_BALANCE, parseUsd, PRIORITY, usdFromJson, usdNumber, MoneyFormatError } from "./money";

describe("parseUsd", () => {
  test.each([
    ["12.5", 12_500_000_000],
    ["0.000123", 123_000],
    ["0.000000001", 1],
    ["-3", -3_000_000_000],
    ["1e-6", 1_000],
    [".5", 500_000_000],
    ["100", 100_000_000_000],
    ["0.1000000000", 100_000_000],
  ] as const)("%s", (input, units) => {
    expect(parseUsd(input)).toBe(units);
  });
  test("JSON numbers are read through their shortest decimal", () => {
    expect(parseUsd(0.1)).toBe(100_000_000);
    expect(parseUsd(0.3)).toBe(300_000_000);
    expect(parseUsd(1.1e-7)).toBe(110);
  });
  test.each(["abc", "1.0000000001", "", "1..2", "NaN"])("rejects %p", (bad) => {
    expect(() => parseUsd(bad)).toThrow(MoneyFormatError);
  });
});

describe("formatUsd", () => {
  test.each([
    [12_500_000_000, "12.5"],
    [123_000, "0.000123"],
    [1, "0.000000001"],
    [0, "0"],
    [-1_500_000_000, "-1.5"],
  ] as const)("%d", (units, text) => {
    expect(formatUsd(units)).toBe(text);
    expect(parseUsd(text)).toBe(units);
  });
  test("usdNumber prints back the exact decimal", () => {
    expect(JSON.stringify(usdNumber(123_000))).toBe("0.000123");
    expect(JSON.stringify(usdNumber(12_500_000_000))).toBe("12.5");
  });
  test("usdNumber never writes exponents: 80 units is 0.00000008, in any JSON it is part of", () => {
    expect(JSON.stringify({ cost: usdNumber(80) })).toBe('{"cost":0.00000008}');
    expect(JSON.stringify([usdNumber(1), usdNumber(-5), usdNumber(0)])).toBe("[0.000000001,-0.000000005,0]");
    expect(JSON.stringify({ b: usdNumber(MAX_BALANCE) })).toBe('{"b":9000000}');
    // What a client parses is the same number.
    expect(JSON.parse(JSON.stringify({ c: usdNumber(80) })).c).toBe(8e-8);
  });
  test("usdFromJson turns a parsed money number back into a plain decimal; anything else stays", () => {
    expect(JSON.stringify({ c: usdFromJson(8e-8) })).toBe('{"c":0.00000008}');
    expect(usdFromJson("x")).toBe("x");
    expect(usdFromJson(null)).toBe(null);
    expect(usdFromJson(1e-12)).toBe(1e-12);
  });
});

describe("cost", () => {
  test("per-million pricing, rounded up once", () => {
    // 1,000 tokens at $0.60/M = $0.0006 = 600,000 units
    expect(cost([{ quantity: 1000, pricePerMillion: 600_000_000 }])).toBe(600_000);
    // 1 token at $0.15/M = 150 units exactly
    expect(cost([{ quantity: 1, pricePerMillion: 150_000_000 }])).toBe(150);
    // 1 token at 1 unit/M rounds up to 1
    expect(cost([{ quantity: 1, pricePerMillion: 1 }])).toBe(1);
  });
  test("turbo is exactly 1.5x before rounding", () => {
    const lines = [
      { quantity: 1234, pricePerMillion: 600_000_000 },
      { quantity: 567, pricePerMillion: 2_400_000_000 },
    ];
    const base = cost(lines);
    expect(base).toBe(2_101_200);
    expect(cost(lines, PRIORITY)).toBe(3_151_800);
  });
  test("large quantities do not lose precision", () => {
    expect(cost([{ quantity: 1_000_000_000, pricePerMillion: 99_999_999_999 }])).toBe(99_999_999_999_000);
  });
  test("absurd quantities saturate at the largest exact integer instead of losing precision", () => {
    expect(cost([{ quantity: 100_000_000_000_000, pricePerMillion: 2_400_000_000 }])).toBe(Number.MAX_SAFE_INTEGER);
  });
});
