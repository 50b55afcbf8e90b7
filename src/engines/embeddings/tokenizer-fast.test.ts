import { describe, expect, test } from "bun:test";
import { Tokenizer } from "@huggingface/tokenizers";
import { buildTinyTokenizer } from "../../../test/support/tiny-tokenizer";
import { rng } from "../../../test/support/seeded-random";
import { EmbeddingTokenizer } from "./tokenizer";
import { installFastBpe, plainEncoder } from "./tokenizer-fast";


const ALPHABET = "aabbcdeeeilmnoorsttu   ..,'";
const EXOTIC = ["é", "日本", "✓", "😀", "\t", "\n", "<", "<b>", "[x]", "▁▁", "  ", "ǅ", "\u0000", "\ud83d"];

/**
 * A Gemma-shaped tokenizer.json (spaces → ▁, BPE with byte fallback, fuse_unk) with merges
 * learned greedily from a random corpus, so they overlap and chain as real ones do, and added
 * tokens starting with `<`, `[`, tab and `▁`, one of them normalized.
 */
function learnedTokenizer(mergeCount: number): { json: Record<string, unknown>; config: Record<string, unknown> } {
  const rnd = rng(42);
  const corpus = Array.from({ length: 400 }, () => Array.from({ length: 40 }, () => ALPHABET[Math.floor(rnd() * ALPHABET.length)]).join("").replaceAll(" ", "▁"));
  const vocab: Record<string, number> = {};
  const add = (p: string) => (vocab[p] ??= Object.keys(vocab).length);
  for (const s of ["<pad>", "<eos>", "<bos>", "<unk>"]) add(s);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  for (const c of new Set(corpus.join(""))) add(c);
  let words = corpus.map((w) => Array.from(w));
  const merges: [string, string][] = [];
  for (let m = 0; m < mergeCount; m++) {
    const counts = new Map<string, number>();
    for (const w of words) for (let i = 0; i + 1 < w.length; i++) counts.set(`${w[i]}\u0001${w[i + 1]}`, (counts.get(`${w[i]}\u0001${w[i + 1]}`) ?? 0) + 1);
    const best = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
    if (!best) break;
    const [l, r] = best[0].split("\u0001") as [string, string];
    merges.push([l, r]);
    add(l + r);
    words = words.map((w) => {
      const out: string[] = [];
      for (let i = 0; i < w.length; i++) {
        if (i + 1 < w.length && w[i] === l && w[i + 1] === r) (out.push(l + r), i++);
        else out.push(w[i]!);
      }
      return out;
    });
  }
  const addedSpecs: [string, boolean][] = [["<start>", false], ["[sep]", false], ["\t\t", false], ["▁▁▁", false], ["zz", true]];
  const added = [
    ...["<pad>", "<eos>", "<bos>", "<unk>"].map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    ...addedSpecs.map(([content, normalized]) => ({ id: add(content), content, single_word: false, lstrip: false, rstrip: false, normalized, special: false })),
  ];
  return {
    json: {
      version: "1.0",
      added_tokens: added,
      normalizer: { type: "Replace", pattern: { String: " " }, content: "▁" },
      pre_tokenizer: { type: "Split", pattern: { String: " " }, behavior: "MergedWithPrevious", invert: false },
      post_processor: { type: "TemplateProcessing", single: [{ SpecialToken: { id: "<bos>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "<eos>", type_id: 0 } }], pair: [], special_tokens: { "<bos>": { id: "<bos>", ids: [2], tokens: ["<bos>"] }, "<eos>": { id: "<eos>", ids: [1], tokens: ["<eos>"] } } },
      decoder: null,
      model: { type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges },
    },
    config: {},
  };
}

function texts(count: number, seed: number): string[] {
  const rnd = rng(seed);
  return Array.from({ length: count }, () => {
    const n = 1 + Math.floor(rnd() * 120);
    let s = "";
    for (let i = 0; i < n; i++) s += rnd() < 0.05 ? EXOTIC[Math.floor(rnd() * EXOTIC.length)] : ALPHABET[Math.floor(rnd() * ALPHABET.length)];
    return s;
  });
}

const library = (spec: { json: Record<string, unknown>; config: Record<string, unknown> }) => new Tokenizer(spec.json, spec.config);

describe("the tokenizer's fast paths give the library's ids", () => {
  const tiny = buildTinyTokenizer();
  for (const [name, spec, merges] of [["tests' tiny tokenizer", tiny, -1], ["tokenizer with 300 learned merges and added tokens", learnedTokenizer(300), 300]] as const) {
    test(`${name}: 3,000 random texts, new and repeated`, () => {
      const ours = EmbeddingTokenizer.fromJson(spec.json, spec.config);
      const theirs = library(spec);
      if (merges > 0) expect((theirs as unknown as { model: { merges: unknown[] } }).model.merges.length).toBe(merges);
      const sample = texts(3000, 7);
      for (const text of [...sample, ...sample.slice(0, 200)]) {
        const want = [ours.bosId, ...theirs.encode(text, { add_special_tokens: false }).ids, ours.eosId];
        expect({ text, ids: ours.encodeText(text) }).toEqual({ text, ids: want });
      }
    });
  }

  test("the fast BPE alone (every text through the library's added-token search) agrees too", () => {
    const spec = learnedTokenizer(300);
    const fast = library(spec);
    expect(installFastBpe(fast)).toBe(true);
    const slow = library(spec);
    for (const text of texts(1000, 11)) expect(fast.encode(text, { add_special_tokens: false }).ids).toEqual(slow.encode(text, { add_special_tokens: false }).ids);
  });

  test("once the fast BPE has the merges the tokenizer lets the library's copies go, and leaves the caller's tokenizer.json whole", () => {
    const spec = learnedTokenizer(300);
    const fast = library(spec);
    expect(installFastBpe(fast)).toBe(true);
    const held = fast as unknown as { tokenizer: { model: { merges: unknown[] } }; model: { merges: unknown[]; config: { merges: unknown[] } } };
    expect([held.model.merges.length, held.model.config.merges.length, held.tokenizer.model.merges.length]).toEqual([0, 0, 0]);
    expect((spec.json.model as { merges: unknown[] }).merges.length).toBe(300);
    const slow = library(spec);
    for (const text of texts(500, 13)) expect(fast.encode(text, { add_special_tokens: false }).ids).toEqual(slow.encode(text, { add_special_tokens: false }).ids);
  });

  test("the short path declines texts that may hold an added token, raw or normalized", () => {
    const plain = plainEncoder(library(learnedTokenizer(50)))!;
    expect(plain("a b")).not.toBeNull();
    for (const t of ["a <start> b", "[", "x\ty", "▁", "zz"]) expect(plain(t)).toBeNull();
  });

  test("a tokenizer the short path does not reproduce is left to the library", () => {
    const spec = learnedTokenizer(20);
    const lower = new Tokenizer(spec.json, { do_lowercase_and_remove_accent: true });
    expect(plainEncoder(lower)).toBeNull();
  });
});
