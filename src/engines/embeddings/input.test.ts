import { describe, expect, test } from "bun:test";
import { DomainError } from "../../errors";
import { parseEmbeddingInput, type SequenceEncoder } from "./input";

/** A stand-in encoder: one token per character, BOS=1, EOS=2, prompts as 3 tokens. */
const enc: SequenceEncoder = {
  vocabSize: 100,
  maxPieceChars: 4,
  encodeText: (t, type) => [1, ...(type ? [7, 7, 7] : []), ...[...t].map((c) => c.charCodeAt(0) % 100), 2],
  wrapIds: (ids, type) => [1, ...(type ? [7, 7, 7] : []), ...ids, 2],
};

async function fails(input: unknown, max = 10): Promise<{ param: string | null; code: string }> {
  try {
    await parseEmbeddingInput(input, enc, max);
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return { param: (e as DomainError).param, code: (e as DomainError).code };
  }
  throw new Error("expected a 400");
}

describe("parseEmbeddingInput", () => {
  test.each([
    ["a string", "ab", [[1, 97, 98, 2]], 4],
    ["strings", ["a", "b"], [[1, 97, 2], [1, 98, 2]], 6],
    ["one token array", [5, 6], [[1, 5, 6, 2]], 4],
    ["token arrays", [[5], [6, 7]], [[1, 5, 2], [1, 6, 7, 2]], 7],
    ["exactly at the limit", "abcdefgh", [[1, 97, 98, 99, 100 % 100, 101 % 100, 102 % 100, 103 % 100, 104 % 100, 2]], 10],
  ] as [string, unknown, number[][], number][])("%s", async (_name, input, sequences, tokens) => {
    expect(await parseEmbeddingInput(input, enc, 10)).toEqual({ sequences, tokens });
  });

  test("input_type adds the prompt's tokens (counted)", async () => {
    expect((await parseEmbeddingInput(["a"], enc, 10, "query")).tokens).toBe(6);
  });

  test.each([
    ["empty string", "", "input", "invalid_value"],
    ["empty array", [], "input", "invalid_value"],
    ["empty entry", ["a", ""], "input[1]", "invalid_value"],
    ["too many entries", Array(2049).fill("a"), "input", "invalid_value"],
    ["over the limit", "abcdefghi", "input", "context_length_exceeded"],
    ["entry over the limit", ["a", "abcdefghi"], "input[1]", "context_length_exceeded"],
    ["far over (not tokenised)", ["a", "x".repeat(41)], "input[1]", "context_length_exceeded"],
    ["token array over the limit", [[1], Array(11).fill(3)], "input[1]", "context_length_exceeded"],
    ["empty token array", [[1], []], "input[1]", "invalid_value"],
    ["token id too big", [[1, 100]], "input[0][1]", "invalid_value"],
    ["negative token id", [4, -1], "input[1]", "invalid_value"],
    ["fractional token id", [[1.5]], "input[0][0]", "invalid_value"],
    ["fractional first token id", [1.5, 2], "input[0]", "invalid_value"],
    ["a string among token ids", [1, "a"], "input[1]", "invalid_value"],
    ["mixed types", ["a", [1]], "input[1]", "invalid_value"],
    ["array of objects", [{}], "input[0]", "invalid_value"],
    ["a number", 5, "input", "invalid_value"],
    ["null", null, "input", "invalid_value"],
    ["missing", undefined, "input", "missing_required_parameter"],
  ] as [string, unknown, string, string][])("%s → 400 %s", async (_name, input, param, code) => {
    expect(await fails(input)).toEqual({ param, code });
  });
});
