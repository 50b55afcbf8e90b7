import { describe, expect, test } from "bun:test";
import { isWellFormedChunk, isWellFormedCompletion } from "./upstream-shape";

describe("isWellFormedCompletion", () => {
  test.each([
    [{ choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] }, true],
    [{ choices: [{ message: { content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] } }] }, true],
    [{ choices: [] }, true],
    [{ choices: [null] }, false],
    [{ choices: [{ message: "text" }] }, false],
    [{ choices: [{ message: { content: "x", tool_calls: [null] } }] }, false],
    [{ choices: [{ message: { content: "x", tool_calls: {} } }] }, false],
    [{ choices: [{ message: { tool_calls: [{ function: "f" }] } }] }, false],
    [{ choices: [{ message: { content: 42 } }] }, false],
    [{ choices: "none" }, false],
    [{}, false],
    [null, false],
  ] as const)("%j → %p", (obj, ok) => {
    expect(isWellFormedCompletion(obj)).toBe(ok);
  });
});

describe("isWellFormedChunk", () => {
  test.each([
    [{ choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }] }, true],
    [{ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "{" } }] } }] }, true],
    [{ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } }, true],
    [{ usage: { prompt_tokens: 1 } }, true],
    [{ choices: [{ delta: { tool_calls: [null] } }] }, false],
    [{ choices: [{ delta: { tool_calls: {} } }] }, false],
    [{ choices: [null] }, false],
    [[1, 2], false],
  ] as const)("%j → %p", (obj, ok) => {
    expect(isWellFormedChunk(obj)).toBe(ok);
  });
});
