import { describe, expect, test } from "bun:test";
import { cardinal, decimal, digitByDigit, ordinal, year } from "./numbers";

describe("numbers", () => {
  test.each([
    ["0", "zero"], ["7", "seven"], ["13", "thirteen"], ["20", "twenty"], ["42", "forty-two"], ["100", "one hundred"],
    ["101", "one hundred one"], ["1000", "one thousand"], ["1234", "one thousand two hundred thirty-four"],
    ["1000000", "one million"], ["2000017", "two million seventeen"], ["007", "seven"],
  ])("cardinal %s", (n, words) => expect(cardinal(n)).toBe(words));

  test("cardinal of a huge number reads digits", () => expect(cardinal("1".repeat(20))).toBe(Array(20).fill("one").join(" ")));

  test.each([
    ["1", "first"], ["2", "second"], ["3", "third"], ["5", "fifth"], ["12", "twelfth"], ["20", "twentieth"],
    ["21", "twenty-first"], ["100", "one hundredth"], ["103", "one hundred third"],
  ])("ordinal %s", (n, words) => expect(ordinal(n)).toBe(words));

  test.each([
    ["1990", "nineteen ninety"], ["1905", "nineteen oh five"], ["1900", "nineteen hundred"], ["2000", "two thousand"],
    ["2008", "two thousand eight"], ["2024", "twenty twenty-four"], ["1066", "ten sixty-six"], ["999", "nine hundred ninety-nine"],
  ])("year %s", (n, words) => expect(year(n)).toBe(words));

  test.each([
    ["3.14", "three point one four"], ["-2", "minus two"], ["1,234", "one thousand two hundred thirty-four"], [".5", "zero point five"],
  ])("decimal %s", (n, words) => expect(decimal(n)).toBe(words));

  test("digit by digit skips non-digits", () => expect(digitByDigit("4-0-1")).toBe("four zero one"));
});
