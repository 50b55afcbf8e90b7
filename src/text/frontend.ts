/**
 * The speech text front end: input text → chunks the model can take in one call. Each chunk is a
 * contiguous slice of the input (so its characters can be billed when its audio is delivered),
 * normalised, converted to phonemes and to token ids, with at most `maxTokens` ids (Kokoro: 510,
 * plus the two pad tokens). Sentences are chunks of their own so audio can stream per sentence;
 * longer ones are cut at clauses, then words.
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
  return { text, chars: codePoints(text), phonemes, ids: tokenize(phonemes, vocab) };
}

function fit(text: string, dialect: Dialect, vocab: Vocab, max: number, level: 0 | 1 | 2): SpeechChunk[] {
  const whole = convert(text, dialect, vocab);
  if (whole.ids.length <= max) return [whole];
  const parts = level === 0 ? splitClauses(text) : level === 1 ? splitWords(text) : [text];
  if (parts.length > 1) {
    const groups = pack(parts, (g) => convert(g.join(""), dialect, vocab).ids.length, max);
    return groups.flatMap((g) => fit(g.join(""), dialect, vocab, max, g.length === 1 ? ((level + 1) as 1 | 2) : level));
  }
  if (level < 2) return fit(text, dialect, vocab, max, (level + 1) as 1 | 2);
  // One "word" longer than the model's window (a giant number): cut its tokens, bill it once.
  const out: SpeechChunk[] = [];
  for (let i = 0; i < whole.ids.length; i += max) {
    out.push({ text: i === 0 ? text : "", chars: i === 0 ? whole.chars : 0, phonemes: "", ids: whole.ids.slice(i, i + max) });
  }
  return out;
}

/**
 * Plans the model calls for a text. Slices that produce no tokens (whitespace, emoji) give their
 * characters to a neighbouring chunk, so every input character is attributed to exactly one chunk.
 * Returns at least one chunk (possibly with no ids).
 */
export function planSpeech(text: string, dialect: Dialect, vocab: Vocab, maxTokens = 510): SpeechChunk[] {
  const chunks: SpeechChunk[] = [];
  let pendingChars = 0;
  let pendingText = "";
  for (const sentence of splitSentences(text)) {
    for (const c of fit(sentence, dialect, vocab, maxTokens, 0)) {
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
    } else chunks.push({ text: pendingText, chars: pendingChars, phonemes: "", ids: [] });
  }
  return chunks;
}
