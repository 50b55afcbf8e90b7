/**
 * The embedding model's own tokenizer, loaded offline from its tokenizer.json with
 * @huggingface/tokenizers (pure JS, no network, no native addon: it works inside the compiled
 * binary). Every sequence handed to the model starts with BOS and ends with EOS, as
 * EmbeddingGemma expects; the token counts used for billing and for the 2,048-token limit are
 * the lengths of exactly these sequences (task prompt and special tokens included).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { promptFor, type InputType } from "./prompts";
import { installFastBpe, plainEncoder } from "./tokenizer-fast";

export class TokenizerLoadError extends Error {}

/** Finds a special token's id by its usual spellings (Gemma: <bos>, <eos>, <pad>). */
function specialId(tok: Tokenizer, names: string[]): number | undefined {
  for (const n of names) {
    const id = tok.token_to_id(n);
    if (id !== undefined) return id;
  }
  return undefined;
}

export class EmbeddingTokenizer {
  readonly bosId: number;
  readonly eosId: number;
  readonly padId: number;
  /** Number of ids the model's embedding table accepts (vocabulary plus added tokens). */
  readonly vocabSize: number;
  /** Longest vocabulary piece in characters: text longer than limit × this is over the limit for sure. */
  readonly maxPieceChars: number;
  private readonly prefixIds = new Map<InputType, number[]>();
  /** The library's encoding by a shorter path for texts without added tokens (tokenizer-fast.ts). */
  private readonly plain: ((text: string) => number[] | null) | null;

  constructor(private readonly tok: Tokenizer) {
    installFastBpe(tok);
    this.plain = plainEncoder(tok);
    const bos = specialId(tok, ["<bos>", "<s>", "[CLS]"]);
    const eos = specialId(tok, ["<eos>", "</s>", "[SEP]"]);
    if (bos === undefined || eos === undefined) throw new TokenizerLoadError("tokenizer.json has no BOS/EOS token (<bos>/<eos>)");
    this.bosId = bos;
    this.eosId = eos;
    this.padId = specialId(tok, ["<pad>", "[PAD]"]) ?? eos;
    const vocab = tok.get_vocab(true);
    let maxId = -1;
    let maxLen = 1;
    for (const [piece, id] of vocab) {
      if (id > maxId) maxId = id;
      if (piece.length > maxLen) maxLen = piece.length;
    }
    this.vocabSize = maxId + 1;
    this.maxPieceChars = maxLen;
  }

  /** Parses tokenizer.json (and tokenizer_config.json when the model ships one). */
  static fromJson(tokenizerJson: unknown, tokenizerConfig: unknown = {}): EmbeddingTokenizer {
    if (typeof tokenizerJson !== "object" || tokenizerJson === null) throw new TokenizerLoadError("tokenizer.json is not a JSON object");
    try {
      return new EmbeddingTokenizer(new Tokenizer(tokenizerJson, (tokenizerConfig ?? {}) as object));
    } catch (e) {
      if (e instanceof TokenizerLoadError) throw e;
      throw new TokenizerLoadError(`tokenizer.json could not be loaded: ${(e as Error).message}`);
    }
  }

  /** Raw ids of a text, without special tokens. */
  private ids(text: string): number[] {
    return this.plain?.(text) ?? this.tok.encode(text, { add_special_tokens: false }).ids;
  }

  private prefix(inputType: InputType | undefined): number[] {
    if (!inputType) return [];
    let p = this.prefixIds.get(inputType);
    if (!p) this.prefixIds.set(inputType, (p = this.ids(promptFor(inputType))));
    return p;
  }

  /**
   * The full sequence the model sees for a text: BOS, task prompt + text, EOS. The prompt is
   * tokenised together with the text (as the reference implementation does), not separately.
   */
  encodeText(text: string, inputType?: InputType): number[] {
    return [this.bosId, ...this.ids(promptFor(inputType) + text), this.eosId];
  }

  /**
   * The full sequence for caller-supplied token ids: BOS and EOS are added unless already there,
   * the task prompt's ids are put in front.
   */
  wrapIds(ids: readonly number[], inputType?: InputType): number[] {
    const body = ids[0] === this.bosId ? ids.slice(1) : ids.slice();
    if (body.at(-1) === this.eosId) body.pop();
    return [this.bosId, ...this.prefix(inputType), ...body, this.eosId];
  }

  decode(ids: number[]): string {
    return this.tok.decode(ids, { skip_special_tokens: true });
  }
}

/** The model's tokenizer.json, plus tokenizer_config.json when present. */
export function loadTokenizer(dir: string): EmbeddingTokenizer {
  const tokenizerJson = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
  let tokenizerConfig: unknown = {};
  try {
    tokenizerConfig = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
  } catch {
    // Optional: tokenizer.json alone carries everything encoding needs.
  }
  return EmbeddingTokenizer.fromJson(tokenizerJson, tokenizerConfig);
}
