import { expect, test } from "bun:test";
import { closestIds, editDistance } from "./suggest";

const LIVE = ["glm-4.6", "glm-4.6-turbo", "kimi-k2-instruct", "kimi-k2-instruct-turbo", "kimi-k2-thinking", "kimi-linear-48b-a3b", "qwen3-235b-a22b-instruct", "minimax-m2"];

test("a case-only difference is suggested (ids are case-sensitive), alone", () => {
  expect(closestIds("GLM-4.6", LIVE)).toEqual(["glm-4.6"]);
});

test("a vendor prefix and a :variant suffix are ignored", () => {
  expect(closestIds("z-ai/glm-4.6", LIVE)).toEqual(["glm-4.6"]);
  expect(closestIds("z-ai/glm-4.6:exacto", LIVE)).toEqual(["glm-4.6"]);
  expect(closestIds("moonshotai/Kimi-K2-Thinking", LIVE)).toEqual(["kimi-k2-thinking"]);
});

test("close ids by edit distance; nothing when nothing is close", () => {
  expect(closestIds("glm-4.5", LIVE)).toEqual(["glm-4.6"]);
  expect(closestIds("minimax-m3", LIVE)).toEqual(["minimax-m2"]);
  expect(closestIds("openai/gpt-4o", LIVE)).toEqual([]);
  expect(closestIds("gpt-4o", LIVE)).toEqual([]);
  expect(closestIds("x".repeat(10_000), LIVE)).toEqual([]);
});

test("a prefix offers the ids it starts, at most three; turbo variants only to turbo requests", () => {
  expect(closestIds("kimi-k2", LIVE)).toEqual(["kimi-k2-instruct", "kimi-k2-thinking"]);
  expect(closestIds("kimi-linear-48b-a3b-turbo", LIVE)).toEqual(["kimi-linear-48b-a3b"]);
  expect(closestIds("GLM-4.6-Turbo", LIVE)).toEqual(["glm-4.6-turbo"]);
});

test("only candidates are offered (the live public ids)", () => {
  expect(closestIds("glm-4.6x", ["kimi-k2-instruct"])).toEqual([]);
});

test("edit distance", () => {
  expect(editDistance("kitten", "sitting", 5)).toBe(3);
  expect(editDistance("abc", "abc", 1)).toBe(0);
  expect(editDistance("abcdef", "uvwxyz", 2)).toBe(3);
});
