import { describe, expect, test } from "bun:test";
import { EmbeddingTokenizer, TokenizerLoadError } from "./tokenizer";
import { TASK_PROMPTS, isInputType, promptFor } from "./prompts";
import { buildTinyTokenizer } from "../../../test/support/tiny-tokenizer";

const t = buildTinyTokenizer();
const tok = EmbeddingTokenizer.fromJson(t.json, t.config);

describe("EmbeddingTokenizer (Gemma-style tokenizer.json via @huggingface/tokenizers)", () => {
  test("finds BOS, EOS and PAD, and the id range", () => {
    expect([tok.bosId, tok.eosId, tok.padId]).toEqual([2, 1, 0]);
    expect(tok.vocabSize).toBe(t.vocabSize);
  });

  test.each([
    ["hello world", "hello world"],
    ["the cat", "the cat"],
    ["héllo ✓ 日本", "héllo ✓ 日本"],
    ["  spaced  out ", "  spaced  out "],
  ])("%p starts with BOS, ends with EOS, and round-trips", (text, back) => {
    const ids = tok.encodeText(text);
    expect(ids[0]).toBe(tok.bosId);
    expect(ids.at(-1)).toBe(tok.eosId);
    expect(ids.filter((i) => i === tok.bosId || i === tok.eosId)).toHaveLength(2);
    expect(tok.decode(ids)).toBe(back);
  });

  test("merges make known words single tokens; unknown characters fall back to bytes", () => {
    expect(tok.encodeText(" hello")).toHaveLength(3);
    expect(tok.encodeText("✓")).toHaveLength(2 + 3); // three UTF-8 bytes
  });

  test("task prompts are prepended and counted", () => {
    const plain = tok.encodeText("the cat");
    const query = tok.encodeText("the cat", "query");
    expect(query.length).toBeGreaterThan(plain.length);
    expect(tok.decode(query)).toBe("task: search result | query: the cat");
  });

  test("wrapIds adds BOS/EOS once, keeps ids that already have them", () => {
    expect(tok.wrapIds([100, 101])).toEqual([2, 100, 101, 1]);
    expect(tok.wrapIds([2, 100, 101, 1])).toEqual([2, 100, 101, 1]);
    expect(tok.decode(tok.wrapIds(tok.encodeText("the cat").slice(1, -1), "document"))).toBe("title: none | text: the cat");
  });

  test("a tokenizer.json that is not an object is refused", () => {
    expect(() => EmbeddingTokenizer.fromJson("nope")).toThrow(TokenizerLoadError);
  });
});

describe("task prompts", () => {
  test("the model card's query and document prompts", () => {
    expect(promptFor("query")).toBe("task: search result | query: ");
    expect(promptFor("document")).toBe("title: none | text: ");
    expect(promptFor(undefined)).toBe("");
  });
  test("every prompt ends with a space before the text", () => {
    for (const p of Object.values(TASK_PROMPTS)) expect(p.endsWith(": ")).toBe(true);
  });
  test.each([["query", true], ["clustering", true], ["toString", false], ["", false], [3, false]] as [unknown, boolean][])("isInputType(%p) = %p", (v, want) => {
    expect(isInputType(v)).toBe(want);
  });
});
