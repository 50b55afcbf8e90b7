/**
 * A small tokenizer.json in the layout of Gemma's (BPE with byte fallback, spaces replaced by
 * "▁", <bos>/<eos>/<pad>/<unk> added tokens, a template post-processor adding BOS and EOS), so
 * the real tokenizer library and the real loading code run in tests without the 33 MB original.
 */

const SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>"];
const WORDS = ["the", "hello", "world", "query", "search", "result", "text", "title", "none", "task", "cat", "dog"];

export interface TinyTokenizer {
  json: Record<string, unknown>;
  config: Record<string, unknown>;
  vocabSize: number;
}

export function buildTinyTokenizer(): TinyTokenizer {
  const vocab: Record<string, number> = {};
  const add = (piece: string) => {
    if (!(piece in vocab)) vocab[piece] = Object.keys(vocab).length;
  };
  SPECIALS.forEach(add);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  add("▁");
  for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:|!?'-") add(c);
  // Merges build "▁word" from "▁" + letters, left to right.
  const merges: [string, string][] = [];
  for (const w of WORDS) {
    let acc = "▁";
    for (const ch of w) {
      const next = acc + ch;
      if (!(next in vocab)) {
        merges.push([acc, ch]);
        add(next);
      }
      acc = next;
    }
  }
  const added = SPECIALS.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  const json = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: "Replace", pattern: { String: " " }, content: "▁" },
    pre_tokenizer: null,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<bos>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "<eos>", type_id: 0 } }],
      pair: [{ SpecialToken: { id: "<bos>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }, { SpecialToken: { id: "<eos>", type_id: 0 } }],
      special_tokens: {
        "<bos>": { id: "<bos>", ids: [2], tokens: ["<bos>"] },
        "<eos>": { id: "<eos>", ids: [1], tokens: ["<eos>"] },
      },
    },
    decoder: {
      type: "Sequence",
      decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }],
    },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "<unk>",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges: merges.map(([a, b]) => `${a} ${b}`),
    },
  };
  const config = { add_bos_token: true, add_eos_token: true, bos_token: "<bos>", eos_token: "<eos>", pad_token: "<pad>", unk_token: "<unk>", model_max_length: 2048 };
  return { json, config, vocabSize: Object.keys(vocab).length };
}
