import { expect, test } from "bun:test";
import { isCompleteJsonObject } from "./tool-arguments";

const table: [string, boolean][] = [
  ["", false],
  ["{", false],
  ['{"x":', false],
  ['{"x":1', false],
  ['{"x":"}"', false],
  ["{}", true],
  ['{"x":1}', true],
  [' {"x":{"y":[1,2]}} \n', true],
  ["[1]", false],
  ["1", false],
  ['"{}"', false],
  ["{} {}", false],
];

for (const [text, complete] of table) {
  test(`${JSON.stringify(text)} → ${complete}`, () => expect(isCompleteJsonObject(text)).toBe(complete));
}
