/**
 * The `input` field of POST /v1/embeddings, checked and turned into the token sequences the model
 * will see (docs/local-models.md): a string, an array of strings, one token array or an array of token
 * arrays; 1–2,048 entries; no empty entry; every sequence (task prompt, BOS and EOS included) at
 * most 2,048 tokens. Each rule breaks with a 400 naming the entry ("input[3]"); nothing is
 * truncated silently.
 */
import { DomainError, invalidField } from "../../errors";
import type { InputType } from "./prompts";

export const MAX_INPUT_ENTRIES = 2048;

/** What the parser needs from the tokenizer (kept narrow so tests can use the real one or not). */
export interface SequenceEncoder {
  vocabSize: number;
  maxPieceChars: number;
  encodeText(text: string, inputType?: InputType): number[];
  wrapIds(ids: readonly number[], inputType?: InputType): number[];
  /** Tokenises many texts at once elsewhere (the tokenizer threads); encodeText's result for each. */
  encodeTexts?(texts: readonly string[], inputType?: InputType): Promise<number[][]>;
}

type Entry = { param: string; text: string } | { param: string; ids: number[] };

const isInt = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x);

function tokenArray(value: unknown[], param: string, vocabSize: number): number[] {
  if (value.length === 0) throw invalidField(param, "must not be empty");
  value.forEach((t, j) => {
    if (!isInt(t)) throw invalidField(`${param}[${j}]`, "must be an integer token id");
    if (t < 0 || t >= vocabSize) throw invalidField(`${param}[${j}]`, `must be a token id from 0 to ${vocabSize - 1}`);
  });
  return value as number[];
}

/** Splits `input` into entries, each with the param name errors about it will carry. */
function entries(input: unknown, vocabSize: number): Entry[] {
  const shapeRule = "must be a string, an array of strings, an array of token ids, or an array of token-id arrays";
  if (typeof input === "string") {
    if (input.length === 0) throw invalidField("input", "must not be an empty string");
    return [{ param: "input", text: input }];
  }
  if (!Array.isArray(input)) {
    if (input === undefined) throw new DomainError("invalid_request", "missing_required_parameter", "Missing required parameter: 'input'.", "input");
    throw invalidField("input", shapeRule);
  }
  if (input.length === 0) throw invalidField("input", "must not be an empty array");
  if (input.length > MAX_INPUT_ENTRIES) throw invalidField("input", `must have at most ${MAX_INPUT_ENTRIES} entries, got ${input.length}`);
  const first = input[0];
  if (typeof first === "number") return [{ param: "input", ids: tokenArray(input, "input", vocabSize) }];
  return input.map((item, i): Entry => {
    const param = `input[${i}]`;
    if (typeof first === "string") {
      if (typeof item !== "string") throw invalidField(param, "must be a string like the other entries");
      if (item.length === 0) throw invalidField(param, "must not be an empty string");
      return { param, text: item };
    }
    if (Array.isArray(first)) {
      if (!Array.isArray(item)) throw invalidField(param, "must be an array of token ids like the other entries");
      return { param, ids: tokenArray(item, param, vocabSize) };
    }
    throw invalidField(param, shapeRule.replace("must be a string, an array of strings", "must be a string"));
  });
}

export interface ParsedInput {
  /** One full model sequence per entry, in request order. */
  sequences: number[][];
  /** Sum of sequence lengths: the billed prompt tokens. */
  tokens: number;
}

function tooLong(param: string, n: number | null, max: number): DomainError {
  const has = n === null ? "is far longer than" : `has ${n.toLocaleString("en-US")} tokens, more than`;
  return new DomainError(
    "invalid_request",
    "context_length_exceeded",
    `Invalid '${param}': it ${has} the ${max.toLocaleString("en-US")}-token limit per input (task prompt, BOS and EOS included). Split the text; inputs are never truncated silently.`,
    param,
  );
}

/**
 * Checks and tokenises every entry. With `enc.encodeTexts` the texts are tokenised in one call
 * elsewhere (tokenizer threads, off the event loop); otherwise here, yielding to the event loop
 * now and then so a request with thousands of long strings does not stall other requests. Either
 * way the first entry that breaks a rule, in request order, is the one reported.
 */
export async function parseEmbeddingInput(input: unknown, enc: SequenceEncoder, maxTokens: number, inputType?: InputType): Promise<ParsedInput> {
  const list = entries(input, enc.vocabSize);
  // No piece is longer than maxPieceChars, so such a text needs more tokens than allowed.
  const hopeless = (e: Entry) => ("text" in e ? e.text.length > maxTokens * enc.maxPieceChars : e.ids.length > maxTokens);
  let encoded: number[][] | null = null;
  if (enc.encodeTexts) {
    // Texts that cannot fit are not tokenised; they are reported in order below.
    const texts = list.filter((e): e is Entry & { text: string } => "text" in e && !hopeless(e)).map((e) => e.text);
    encoded = texts.length ? await enc.encodeTexts(texts, inputType) : [];
  }
  const sequences: number[][] = [];
  let tokens = 0;
  let sinceYield = 0;
  let next = 0;
  for (const e of list) {
    if (hopeless(e)) throw tooLong(e.param, "text" in e ? null : e.ids.length, maxTokens);
    let seq: number[];
    if ("text" in e) {
      seq = encoded ? encoded[next++]! : enc.encodeText(e.text, inputType);
      if (!encoded) sinceYield += e.text.length;
    } else {
      seq = enc.wrapIds(e.ids, inputType);
      sinceYield += e.ids.length;
    }
    if (seq.length > maxTokens) throw tooLong(e.param, seq.length, maxTokens);
    sequences.push(seq);
    tokens += seq.length;
    if (sinceYield > 50_000) {
      sinceYield = 0;
      await new Promise((r) => setImmediate(r));
    }
  }
  return { sequences, tokens };
}
