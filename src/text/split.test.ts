import { describe, expect, test } from "bun:test";
import { pack, splitClauses, splitSentences, splitWords } from "./split";

describe("splitting", () => {
  test.each([
    ["One. Two! Three? Four", ["One. ", "Two! ", "Three? ", "Four"]],
    ["Dr. Smith met Mr. Jones. Then left.", ["Dr. Smith met Mr. Jones. ", "Then left."]],
    ["J. R. R. Tolkien wrote it. Yes.", ["J. R. R. Tolkien wrote it. ", "Yes."]],
    ['He said "stop." Then ran.', ['He said "stop." ', "Then ran."]],
    ["Pi is 3.14 exactly. Right.", ["Pi is 3.14 exactly. ", "Right."]],
    ["Para one\n\nPara two", ["Para one\n\n", "Para two"]],
    ["Wait… what?! Okay.", ["Wait… ", "what?! ", "Okay."]],
    ["We met at 3 p.m. and talked. Then left.", ["We met at 3 p.m. and talked. ", "Then left."]],
    ["", []],
  ])("sentences of %j", (text, parts) => {
    expect(splitSentences(text)).toEqual(parts);
    expect(splitSentences(text).join("")).toBe(text);
  });

  test("clauses and words cover the text", () => {
    const t = "First, second; third: fourth — fifth and sixth";
    expect(splitClauses(t)).toEqual(["First, ", "second; ", "third: ", "fourth — ", "fifth and sixth"]);
    expect(splitWords("a  b c").join("")).toBe("a  b c");
    expect(splitWords("a  b c")).toEqual(["a  ", "b ", "c"]);
  });

  test.each([
    ["On June 3rd, 2024, we met.", ["On June 3rd, 2024, ", "we met."]],
    ["One, two, three", ["One, ", "two, ", "three"]],
    ["Numbers 1, 2, 3 here", ["Numbers 1, ", "2, ", "3 here"]],
  ])("clauses keep a date's year with it: %j", (text, parts) => expect(splitClauses(text)).toEqual(parts));

  test("words keep what follows a number, and a name after its title", () => {
    expect(splitWords("at 6:45 pm on Dr. Smith's boat")).toEqual(["at ", "6:45 pm ", "on ", "Dr. Smith's ", "boat"]);
    expect(splitWords("raised $3 billion today")).toEqual(["raised ", "$3 billion ", "today"]);
    expect(splitWords("on June 3rd we")).toEqual(["on ", "June 3rd we"]);
  });

  test("pack groups greedily under the limit", () => {
    const len = (g: string[]) => g.join("").length;
    expect(pack(["aa", "bb", "cc", "dddddd", "e"], len, 4)).toEqual([["aa", "bb"], ["cc"], ["dddddd"], ["e"]]);
  });
});
