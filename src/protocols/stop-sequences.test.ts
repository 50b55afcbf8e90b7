import { describe, expect, test } from "bun:test";
import { findStop, StopScanner } from "./stop-sequences";

test.each([
  ["no stop here", ["###"], null],
  ["answer###tail", ["###"], { index: 6, stop: "###" }],
  ["a END b ##", ["##", "END"], { index: 2, stop: "END" }],
  ["x<END>y", ["<E", "<END>"], { index: 1, stop: "<END>" }],
  ["empty stop ignored", [""], null],
])("findStop(%p, %p)", (text, stops, hit) => {
  expect(findStop(text, stops)).toEqual(hit);
});

describe("StopScanner over chunks", () => {
  const run = (chunks: readonly string[], stops: readonly string[]) => {
    const s = new StopScanner(stops);
    const out = chunks.map((c) => s.push(c)).join("") + s.flush();
    return { out, matched: s.matched };
  };
  test.each([
    { chunks: ["Hello", " wor", "ld"], stops: ["###"], out: "Hello world", matched: null },
    { chunks: ["Answer: 4", "#", "##", " and more"], stops: ["###"], out: "Answer: 4", matched: "###" },
    { chunks: ["a\n\nHu", "man: next"], stops: ["\n\nHuman:"], out: "a", matched: "\n\nHuman:" },
    { chunks: ["almost #", "# but not"], stops: ["###"], out: "almost ## but not", matched: null },
    { chunks: ["ends with #"], stops: ["###"], out: "ends with #", matched: null },
  ])("$chunks → $out", ({ chunks, stops, out, matched }) => {
    expect(run(chunks, stops)).toEqual({ out, matched });
  });

  test("a prefix is held back only as long as it could still match", () => {
    const s = new StopScanner(["STOP"]);
    expect(s.push("abc ST")).toBe("abc ");
    expect(s.push("ar")).toBe("STar");
    expect(s.push("!")).toBe("!");
  });

  test("no stop sequences: text passes straight through", () => {
    const s = new StopScanner([]);
    expect(s.active).toBe(false);
    expect(s.push("###")).toBe("###");
  });
});
