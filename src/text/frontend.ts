/**
 * The speech text front end: input text → chunks the model can take in one call. Each chunk is a
 * contiguous slice of the input (so its characters can be billed when its audio is delivered),
 * normalised, converted to phonemes and to token ids, with at most `maxTokens` ids (Kokoro: 510,
 * plus the two pad tokens). Sentences are chunks of their own so audio can stream per sentence;
 * longer ones are cut at clauses, then words. The first chunk is kept short (its first clauses,
 * at most FIRST_CHUNK_TOKENS phonemes) so the first audio follows the first few words. Each chunk
 * carries the pause that goes before it, from the punctuation that ended the previous one.
 */
import { codePoints } from "../billing/prices";
import { phonemize } from "./g2p";
import { normalizeText, type Dialect } from "./normalize";
import { pack, splitClauses, splitSentences, splitWords } from "./split";

export interface SpeechChunk {
  /** The slice of the input this chunk speaks. */
  text: string;
  /** Unicode code points of `text`, attributed to this chunk for billing. */
  chars: number;
  phonemes: string;
  /** Token ids without the pad tokens. */
  ids: number[];
  /** Silence before this chunk's audio, at speed 1 (see pauseAfter). */
  pauseBeforeMs: number;
}

/** Phoneme tokens of the first chunk at most (about a second and a half of speech). */
export const FIRST_CHUNK_TOKENS = 100;

/** Pauses by what ended the previous chunk, in milliseconds at speed 1. */
export const PAUSES_MS = { paragraph: 600, sentence: 300, clause: 150, word: 0 } as const;

/** The pause after a chunk, from how its text ends. */
export function pauseAfter(text: string): number {
  if (/\n\s*\n\s*$/.test(text)) return PAUSES_MS.paragraph;
  const end = text.trimEnd();
  if (/[.!?…]["'”’)\]]*$/.test(end)) return PAUSES_MS.sentence;
  if (/[,;:—–-]["'”’)\]]*$/.test(end)) return PAUSES_MS.clause;
  return PAUSES_MS.word;
}

export type Vocab = ReadonlyMap<string, number>;

export function tokenize(phonemes: string, vocab: Vocab): number[] {
  const ids: number[] = [];
  for (const ch of phonemes) {
    const id = vocab.get(ch);
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

function convert(text: string, dialect: Dialect, vocab: Vocab): SpeechChunk {
  const phonemes = phonemize(normalizeText(text, dialect), dialect);
  return { text, chars: codePoints(text), phonemes, ids: tokenize(phonemes, vocab), pauseBeforeMs: 0 };
}

/** `whole` is the text converted whole, when the caller has it already (conversion is pure). */
function fit(text: string, dialect: Dialect, vocab: Vocab, max: number, level: 0 | 1 | 2, whole = convert(text, dialect, vocab)): SpeechChunk[] {
  if (whole.ids.length <= max) return [whole];
  const parts = level === 0 ? splitClauses(text) : level === 1 ? splitWords(text) : [text];
  if (parts.length > 1) {
    const groups = pack(parts, (g) => convert(g.join(""), dialect, vocab).ids.length, max);
    return groups.flatMap((g) => fit(g.join(""), dialect, vocab, max, g.length === 1 ? ((level + 1) as 1 | 2) : level));
  }
  if (level < 2) return fit(text, dialect, vocab, max, (level + 1) as 1 | 2, whole);
  // One "word" longer than the model's window (a giant number): cut its tokens, bill it once.
  const out: SpeechChunk[] = [];
  for (let i = 0; i < whole.ids.length; i += max) {
    out.push({ text: i === 0 ? text : "", chars: i === 0 ? whole.chars : 0, phonemes: "", ids: whole.ids.slice(i, i + max), pauseBeforeMs: 0 });
  }
  return out;
}

/**
 * Plans the model calls for a text. Slices that produce no tokens (whitespace, emoji) give their
 * characters to a neighbouring chunk, so every input character is attributed to exactly one chunk.
 * Returns at least one chunk (possibly with no ids).
 */
export function planSpeech(text: string, dialect: Dialect, vocab: Vocab, maxTokens = 510, firstChunkTokens = FIRST_CHUNK_TOKENS): SpeechChunk[] {
  const chunks: SpeechChunk[] = [];
  let pendingChars = 0;
  let pendingText = "";
  for (const sentence of splitSentences(text)) {
    for (const c of chunks.length === 0 ? fitFirst(sentence, dialect, vocab, maxTokens, firstChunkTokens) : fit(sentence, dialect, vocab, maxTokens, 0)) {
      if (c.ids.length === 0) {
        pendingChars += c.chars;
        pendingText += c.text;
        continue;
      }
      chunks.push({ ...c, text: pendingText + c.text, chars: c.chars + pendingChars });
      pendingChars = 0;
      pendingText = "";
    }
  }
  if (pendingChars > 0 || chunks.length === 0) {
    const last = chunks[chunks.length - 1];
    if (last) {
      last.chars += pendingChars;
      last.text += pendingText;
    } else chunks.push({ text: pendingText, chars: pendingChars, phonemes: "", ids: [], pauseBeforeMs: 0 });
  }
  for (let i = 1; i < chunks.length; i++) chunks[i]!.pauseBeforeMs = pauseAfter(chunks[i - 1]!.text);
  return chunks;
}

/**
 * The first sentence that has anything to say: its first clauses up to `first` tokens (words
 * when one clause is longer) as a chunk of their own, the rest as usual.
 */
function fitFirst(sentence: string, dialect: Dialect, vocab: Vocab, max: number, first: number): SpeechChunk[] {
  const whole = convert(sentence, dialect, vocab);
  const head = fit(sentence, dialect, vocab, Math.min(first, max), 0, whole)[0];
  if (!head || head.ids.length === 0 || head.text.length >= sentence.length || head.text === "") return fit(sentence, dialect, vocab, max, 0, whole);
  return [head, ...fit(sentence.slice(head.text.length), dialect, vocab, max, 0)];
}
