/**
 * Local token counting for chat. Upstream engines use their own tokenizers, so this is an
 * estimate: o200k_base BPE via gpt-tokenizer (pure JS, ~20 MB/s here) is close for modern
 * multilingual vocabularies. Two uses: a cheap *upper bound* (UTF-8 bytes: a byte-level BPE
 * token covers at least one byte) to size holds, and a *count* for context-window checks and
 * for billing when an upstream omits usage.
 *
 * Counting is linear in the input. BPE merges one pre-token (a word, a run of punctuation or
 * of spaces) in time quadratic in its length, so a client's 120,000 × "a" — one pre-token —
 * took 40 s. Pre-tokens longer than LONG_PIECE characters are therefore counted in short parts
 * (no natural text has such pre-tokens; the parts' sum stays within a few per cent of the
 * whole's BPE), and everything else is counted in segments cut at pre-token
 * boundaries, so normal text gets exactly gpt-tokenizer's count. Counting still takes ~50 ns
 * per character, so the server counts in a worker thread (see token-counter.ts), in steps.
 *
 * The tokenizer's tables are loaded on first use: ~100 MB that the serving thread never loads
 * (every full garbage collection there would have to walk them).
 */
import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";

type CountTokens = typeof import("gpt-tokenizer/encoding/o200k_base").countTokens;
let countTokens: CountTokens | null = null;

/** Chat templates add role markers and separators around each message. */
export const PER_MESSAGE_OVERHEAD = 8;
/** What one image part may cost at most, as input tokens. */
export const IMAGE_TOKEN_BOUND = 2_048;

/** Pre-tokens longer than this (in UTF-16 units) are counted in parts. */
export const LONG_PIECE = 64;
/** Parts of a long pre-token: short enough that the quadratic merge stays cheap per character. */
const PART = 16;
/** Parts of a run of one repeated character: long enough for the vocabulary's longest run tokens. */
const RUN_PART = 128;
/** Text is handed to the BPE in segments of about this length, so a limit can stop early. */
const SEGMENT = 16_384;
/** Distinct parts remembered per call (runs repeat the same part). */
const MEMO_LIMIT = 4_096;

const PRE_TOKENS = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, "gu");
/** Special-token markup ("<|endoftext|>") in client text is plain text, never an error. */
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };
const bpe = (text: string): number => {
  countTokens ??= (require("gpt-tokenizer/encoding/o200k_base") as { countTokens: CountTokens }).countTokens;
  return countTokens(text, AS_PLAIN_TEXT);
};

type Part = { type?: unknown; text?: unknown; image_url?: unknown };
type Message = { role?: unknown; content?: unknown; name?: unknown; tool_calls?: unknown };

/**
 * Jobs up to this many characters (a chat turn: well under a millisecond of prose) go to the
 * counter's short lane, a worker at the serving thread's priority; longer ones to the long lane,
 * in the background (see token-counter.ts). Prompts have a higher bound (SHORT_PROMPT_CHARS).
 */
export const SHORT_JOB_CHARS = 16 * 1024;

const LETTER = /\p{L}/u;
const SPACE = /\s/u;

/** Whether text[i] is whitespace (as the pre-tokenizer's \s sees it). */
function isSpaceAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c < 128) return c === 32 || (c >= 9 && c <= 13);
  return SPACE.test(text[i]!);
}

/** Whether text[i] is a letter (o200k's pre-tokenizer starts a new piece at a space before one). */
export function isLetterAt(text: string, i: number): boolean {
  if (!(i < text.length)) return false;
  const c = text.charCodeAt(i);
  if (c < 128) return (c | 32) >= 97 && (c | 32) <= 122;
  return LETTER.test(text[i]!);
}

/**
 * The tokens of `text`. With a `limit`, counting may stop once the count exceeds it: the result
 * is then some number above the limit (exact whenever it is at most the limit).
 */
export function countTextTokens(text: string, limit = Infinity): number {
  return finish(countTextSteps(text, limit));
}

/** The sum of the texts' tokens, stopping early (above `limit`) like countTextTokens. */
export function countTexts(texts: string[], limit = Infinity): number {
  return finish(countTextsSteps(texts, limit));
}

/**
 * countTexts in steps: yields after each stretch of about `stepChars` characters (STEP_CHARS
 * unless told), so a caller (the worker) can serve other jobs between them. Returns the count.
 */
export function* countTextsSteps(texts: string[], limit = Infinity, stepChars = STEP_CHARS): Generator<void, number> {
  let n = 0;
  for (const t of texts) {
    n += yield* countTextSteps(t, limit - n, stepChars);
    if (n > limit) break;
  }
  return n;
}

/** About this many characters are counted between two yields of countTextsSteps. */
export const STEP_CHARS = 64 * 1024;

function* countTextSteps(text: string, limit: number, stepChars = STEP_CHARS): Generator<void, number> {
  // Segments no longer than a step, so that a step ends where it should. Cutting at a pre-token
  // boundary changes no count, except after whitespace: alone at a segment's end, " \t" is one
  // pre-token where, followed by ",", it is two. So a segment never ends in whitespace.
  const segment = Math.min(SEGMENT, stepChars);
  if (!text) return 0;
  if (text.length <= LONG_PIECE) return bpe(text);
  // Text built by concatenation (a relayed stream's output) is a rope: reading one character
  // flattens it once, else every slice below would walk the rope again (10x slower).
  text.charCodeAt(0);
  let count = 0;
  let segmentStart = 0;
  let stepStart = 0;
  let memo: Map<string, number> | null = null;
  for (const match of text.matchAll(PRE_TOKENS)) {
    const piece = match[0];
    const start = match.index;
    if (piece.length <= LONG_PIECE) {
      const end = start + piece.length;
      if (end - segmentStart < segment || isSpaceAt(text, end - 1)) continue;
      count += bpe(text.slice(segmentStart, end));
      segmentStart = end;
    } else {
      if (start > segmentStart) count += bpe(text.slice(segmentStart, start));
      count += yield* countLongPiece(piece, (memo ??= new Map()), limit - count, stepChars);
      segmentStart = start + piece.length;
    }
    if (count > limit) return count;
    if (segmentStart - stepStart >= stepChars) {
      stepStart = segmentStart;
      yield;
    }
  }
  if (segmentStart < text.length) count += bpe(text.slice(segmentStart));
  return count;
}

function finish(steps: Generator<void, number>): number {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * One long pre-token, in parts: a run of one repeated character in parts of up to RUN_PART (BPE
 * vocabularies have long tokens for such runs: 128 spaces, "=====…"), anything else in parts of
 * PART characters. A surrogate pair is never cut. Runs repeat their part, so the memo makes them
 * nearly free; mixed parts cost O(PART²) each, which keeps hostile text at a few MB/s.
 */
function* countLongPiece(piece: string, memo: Map<string, number>, limit: number, stepChars: number): Generator<void, number> {
  piece.charCodeAt(0); // a long match is a substring view: flatten it once, as above
  let count = 0;
  let stepStart = 0;
  for (let i = 0; i < piece.length; ) {
    if (i - stepStart >= stepChars) {
      if (count > limit) return count;
      stepStart = i;
      yield;
    }
    const first = piece.charCodeAt(i);
    let end = i + 1;
    while (end < piece.length && end - i < RUN_PART && piece.charCodeAt(end) === first) end++;
    if (end - i < PART) {
      end = Math.min(i + PART, piece.length);
      const last = piece.charCodeAt(end - 1);
      if (last >= 0xd800 && last <= 0xdbff && end < piece.length) end++;
    }
    const part = piece.slice(i, end);
    let n = memo.get(part);
    if (n === undefined) {
      n = bpe(part);
      if (memo.size < MEMO_LIMIT) memo.set(part, n);
    }
    count += n;
    i = end;
  }
  return count;
}

/** The pieces of a prompt that are counted: every text, plus how many messages and images. */
export interface PromptTexts {
  texts: string[];
  messages: number;
  images: number;
}

/** Visits every piece of text in chat messages (content, text parts, tool calls, tools). */
export function promptTexts(messages: Message[], extra: unknown[] = []): PromptTexts {
  const texts: string[] = [];
  let images = 0;
  for (const m of messages) {
    if (typeof m.content === "string") texts.push(m.content);
    else if (Array.isArray(m.content)) {
      for (const p of m.content as Part[]) {
        if (typeof p?.text === "string") texts.push(p.text);
        else if (p?.type === "image_url" || p?.type === "input_image" || p?.type === "image") images++;
        else if (p && typeof p === "object") texts.push(JSON.stringify(p));
      }
    }
    if (m.tool_calls !== undefined) texts.push(JSON.stringify(m.tool_calls));
    if (typeof m.name === "string") texts.push(m.name);
  }
  for (const e of extra) if (e !== undefined) texts.push(JSON.stringify(e));
  return { texts, messages: messages.length, images };
}

/** Characters of text in a prompt: what counting it costs. */
export function textLength(texts: string[]): number {
  let n = 0;
  for (const t of texts) n += t.length;
  return n;
}

/** What a prompt adds besides its texts: template overhead per message, an estimate per image. */
export function promptOverhead(p: PromptTexts): number {
  return p.messages * PER_MESSAGE_OVERHEAD + p.images * (IMAGE_TOKEN_BOUND / 2);
}

/** UTF-8 bytes of the text a prompt's count reads (what count_tokens is limited by). */
export function promptTextBytes(messages: Message[], extra: unknown[] = []): number {
  let n = 0;
  for (const t of promptTexts(messages, extra).texts) n += Buffer.byteLength(t, "utf8");
  return n;
}

/** An upper bound of the prompt's tokens, without tokenizing (O(bytes)). */
export function promptTokenBound(messages: Message[], extra: unknown[] = []): number {
  const p = promptTexts(messages, extra);
  let n = p.messages * PER_MESSAGE_OVERHEAD + p.images * IMAGE_TOKEN_BOUND;
  for (const t of p.texts) n += Buffer.byteLength(t, "utf8");
  return n;
}

/** The estimated prompt tokens (BPE count plus template overhead), on the calling thread. */
export function promptTokenCount(messages: Message[], extra: unknown[] = []): number {
  const p = promptTexts(messages, extra);
  return promptOverhead(p) + countTexts(p.texts);
}
