import { describe, expect, test } from "bun:test";
import { normalizeText } from "./normalize";

describe("normalizeText", () => {
  test.each([
    ["I have 3 cats.", "I have three cats."],
    ["It costs $5.20 today.", "It costs five dollars and twenty cents today."],
    ["It costs $1 only.", "It costs one dollar only."],
    ["£3.50", "three pounds and fifty pence"],
    ["€0.99", "ninety-nine cents"],
    ["$2.5 million", "two point five million dollars"],
    ["Growth was 45%.", "Growth was forty-five percent."],
    ["Meet at 3:30 pm.", "Meet at three thirty P M."],
    ["See you at 9 a.m. or at 9:15 a.m. today.", "See you at nine A M or at nine fifteen A M today."],
    ["Lunch at 1 pm. Then rest.", "Lunch at one P M. Then rest."],
    ["At 7:00 sharp", "At seven o'clock sharp"],
    ["At 7:05", "At seven oh five"],
    ["Born in 1999.", "Born in nineteen ninety-nine."],
    ["The 1990s were loud.", "The nineteen nineties were loud."],
    ["The 21st century", "The twenty-first century"],
    ["Dr. Smith and Mr. Jones", "doctor Smith and mister Jones"],
    ["St. Louis is on Main St. today", "saint Louis is on Main street today"],
    ["e.g. apples, i.e. fruit", "for example apples, that is fruit"],
    ["Pages 10-20", "Pages ten to twenty"],
    ["It is -5 outside", "It is minus five outside"],
    ["Run 10 km", "Run ten kilometers"],
    ["Tom & Jerry", "Tom and Jerry"],
    ["1,234,567 people", "one million two hundred thirty-four thousand five hundred sixty-seven people"],
    ["Wait...", "Wait…"],
  ])("%s", (input, out) => expect(normalizeText(input)).toBe(out));

  test.each([
    ["2024-01-15", "us", "January fifteenth, twenty twenty-four"],
    ["2024-01-15", "gb", "the fifteenth of January, twenty twenty-four"],
    ["5/6/2024", "us", "May sixth, twenty twenty-four"],
    ["5/6/2024", "gb", "the fifth of June, twenty twenty-four"],
    ["March 3rd, 2024", "us", "March third, twenty twenty-four"],
    ["3 March 2024", "us", "the third of March, twenty twenty-four"],
    ["Jan. 5", "us", "January fifth"],
  ] as const)("date %s (%s)", (input, dialect, out) => expect(normalizeText(input, dialect)).toBe(out));

  test("odd input never throws", () => {
    for (const s of ["", "$", "%", "13/45/2024", "99:99", "$,", "\u0000\uFFFF", "😀".repeat(10), "9".repeat(500)]) {
      expect(typeof normalizeText(s)).toBe("string");
    }
  });
});
