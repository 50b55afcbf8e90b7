/**
 * @huggingface/tokenizers' own encoding, with two costs taken out (the library version is pinned
 * in package.json; tokenizer.test.ts compares these paths with the library's on many texts):
 *
 * - its BPE merging (bpe.ts does the same merges on integer ids, ~4x faster on a new text), and
 *   its cache of merged texts (RecentPieces below);
 * - for a text in which no added token can start (none of their first characters occurs: for
 *   EmbeddingGemma `<`, `[`, tab, newline, `▁`), the search for added tokens and the plumbing
 *   around it: the text goes straight through the library's normalizer, pre-tokenizer and model
 *   (~9 → ~5 µs for a 29-token text the library has cached).
 *
 * Both reach into the library's objects (its JS has no private fields); each is installed only
 * when those objects look as expected, else the library runs as it is.
 */
import type { Tokenizer } from "@huggingface/tokenizers";
import { BpeMerges } from "./bpe";

type Fn<A extends unknown[], R> = ((...args: A) => R) | null;

/** The parts of the library's Tokenizer and BPE model used here. */
interface Internals {
  /** The parsed tokenizer.json, as given. */
  tokenizer?: { model?: unknown };
  normalizer: Fn<[string], string>;
  pre_tokenizer: Fn<[string, { section_index: number }], string[]>;
  post_processor: { config?: { type?: string } } | null;
  model: Fn<[string[]], string[]> & {
    /** Its part of tokenizer.json. */
    config?: Record<string, unknown>;
    bpe?: (token: string) => string[];
    merges?: unknown;
    bpe_ranks?: unknown;
    vocab?: unknown;
    tokens_to_ids?: unknown;
    unk_token_id?: number;
    end_of_word_suffix?: unknown;
    continuing_subword_suffix?: unknown;
    max_length_to_cache?: number;
  };
  added_tokens?: { content: string; normalized: boolean }[];
  added_tokens_map?: Map<string, { id: number }>;
  remove_space?: unknown;
  do_lowercase_and_remove_accent?: unknown;
}

/** Texts whose pieces are kept, as many as the library's own cache holds. */
const CACHE_ENTRIES = 10_000;

/**
 * The pieces of recently merged texts, in two generations: a full current one becomes the
 * previous one and a new one starts. The library's LRU cache evicts with
 * `map.keys().next()`, which walks past every entry deleted before it: with texts that are all
 * new, each eviction got slower (26 → 46 µs per 150-character text over 60,000 texts).
 */
class RecentPieces {
  private current = new Map<string, string[]>();
  private previous = new Map<string, string[]>();

  constructor(private readonly capacity: number) {}

  get(text: string): string[] | undefined {
    const hit = this.current.get(text);
    if (hit !== undefined) return hit;
    const old = this.previous.get(text);
    if (old !== undefined) this.set(text, old);
    return old;
  }

  set(text: string, pieces: string[]): void {
    if (this.current.size >= this.capacity / 2) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(text, pieces);
  }
}

/** Replaces the BPE model's merging with BpeMerges; false when the model is not a plain BPE. */
export function installFastBpe(tok: Tokenizer): boolean {
  const t = tok as unknown as Internals;
  const model = t.model;
  const merges = model?.merges;
  if (typeof model?.bpe !== "function" || !Array.isArray(merges) || !(model.tokens_to_ids instanceof Map) || !Array.isArray(model.vocab)) return false;
  if (model.end_of_word_suffix || model.continuing_subword_suffix) return false;
  if (!merges.every((m) => Array.isArray(m) && m.length === 2 && typeof m[0] === "string" && typeof m[1] === "string")) return false;
  const table = new BpeMerges(model.tokens_to_ids as Map<string, number>, model.vocab as string[], merges as [string, string][]);
  const cache = new RecentPieces(CACHE_ENTRIES);
  const cacheBelow = model.max_length_to_cache ?? 256;
  model.bpe = (token: string) => {
    if (token.length === 0) return [];
    const hit = cache.get(token);
    if (hit !== undefined) return hit;
    const pieces = table.merge(token);
    if (token.length < cacheBelow) cache.set(token, pieces);
    return pieces;
  };
  // The library's own rank table (JSON-string keys, ~100 MB for Gemma's 514,906 merges) is no longer read.
  model.bpe_ranks = new Map();
  // Nor are the merges (only the library's constructor reads them). Its list is the parsed
  // tokenizer.json's own array, held by the model's config and by the tokenizer's copy of the JSON:
  // both are swapped for shallow copies without it (the caller's object is left as it was), so a
  // tokenizer.json parsed for this tokenizer alone lets them go. For Gemma that is 1.85 of the
  // heap's 2.17 million objects (every full collection marks them) and ~45 MB per tokenizer, one
  // per thread that tokenizes.
  model.merges = [];
  if (model.config) {
    model.config = { ...model.config, merges: [] };
    if (t.tokenizer?.model) t.tokenizer = { ...t.tokenizer, model: model.config };
  }
  return true;
}

/**
 * The ids of a text without special tokens, as tok.encode(text, { add_special_tokens: false })
 * gives them, by the short path when the text holds no possible added token; null when it may
 * (then the library's full encode must run). Null itself when the tokenizer is not of the kind
 * the short path reproduces.
 */
export function plainEncoder(tok: Tokenizer): ((text: string) => number[] | null) | null {
  const t = tok as unknown as Internals;
  const model = t.model;
  const post = t.post_processor;
  if (typeof model !== "function" || !(model.tokens_to_ids instanceof Map) || !(t.added_tokens_map instanceof Map) || !Array.isArray(t.added_tokens)) return null;
  if (t.remove_space || t.do_lowercase_and_remove_accent) return null;
  if ((t.normalizer !== null && typeof t.normalizer !== "function") || (t.pre_tokenizer !== null && typeof t.pre_tokenizer !== "function")) return null;
  if (post !== null && post?.config?.type !== "TemplateProcessing") return null;
  const normalize = t.normalizer;
  const preTokenize = t.pre_tokenizer;
  // First UTF-16 unit of every added token, as it would be matched: raw text, or normalized text.
  const rawStarts = new Set<number>();
  const normalizedStarts = new Set<number>();
  for (const a of t.added_tokens) {
    if (a.content.length === 0) return null;
    if (a.normalized && normalize) normalizedStarts.add(normalize(a.content).charCodeAt(0));
    else rawStarts.add(a.content.charCodeAt(0));
  }
  const holds = (s: string, starts: Set<number>) => {
    if (starts.size === 0) return false;
    for (let i = 0; i < s.length; i++) if (starts.has(s.charCodeAt(i))) return true;
    return false;
  };
  const vocab = model.tokens_to_ids as Map<string, number>;
  const added = t.added_tokens_map;
  const unk = model.unk_token_id;
  return (text: string) => {
    if (holds(text, rawStarts)) return null;
    const normalized = normalize ? normalize(text) : text;
    if (normalized.length === 0) return [];
    if (holds(normalized, normalizedStarts)) return null;
    const tokens = model(preTokenize ? preTokenize(normalized, { section_index: 0 }) : [normalized]);
    const ids = new Array<number>(tokens.length);
    for (let i = 0; i < tokens.length; i++) ids[i] = (added.get(tokens[i]!)?.id ?? vocab.get(tokens[i]!) ?? unk)!;
    return ids;
  };
}
