/**
 * Local token counting for chat. Upstream engines use their own tokenizers, so this is an
 * estimate: o200k_base BPE via gpt-tokenizer (pure JS, ~25 MB/s here) is close for modern
 * multilingual vocabularies. Two uses: a cheap *upper bound* (UTF-8 bytes: a byte-level BPE
 * token covers at least one byte) to size holds, and a *count* for context-window checks and
 * for billing when an upstream omits usage.
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

/** Chat templates add role markers and separators around each message. */
export const PER_MESSAGE_OVERHEAD = 8;
/** What one image part may cost at most, as input tokens. */
export const IMAGE_TOKEN_BOUND = 2_048;

type Part = { type?: unknown; text?: unknown; image_url?: unknown };
type Message = { role?: unknown; content?: unknown; name?: unknown; tool_calls?: unknown };

export function countTextTokens(text: string): number {
  return text ? countTokens(text) : 0;
}

/** Visits every piece of text in chat messages (content, text parts, tool calls, tools). */
function forEachText(messages: Message[], extra: unknown[], visit: (text: string) => void, image: () => void): void {
  for (const m of messages) {
    if (typeof m.content === "string") visit(m.content);
    else if (Array.isArray(m.content)) {
      for (const p of m.content as Part[]) {
        if (typeof p?.text === "string") visit(p.text);
        else if (p?.type === "image_url" || p?.type === "input_image" || p?.type === "image") image();
        else if (p && typeof p === "object") visit(JSON.stringify(p));
      }
    }
    if (m.tool_calls !== undefined) visit(JSON.stringify(m.tool_calls));
    if (typeof m.name === "string") visit(m.name);
  }
  for (const e of extra) if (e !== undefined) visit(JSON.stringify(e));
}

/** An upper bound of the prompt's tokens, without tokenizing (O(bytes)). */
export function promptTokenBound(messages: Message[], extra: unknown[] = []): number {
  let n = messages.length * PER_MESSAGE_OVERHEAD;
  forEachText(messages, extra, (t) => (n += Buffer.byteLength(t, "utf8")), () => (n += IMAGE_TOKEN_BOUND));
  return n;
}

/** The estimated prompt tokens (BPE count plus template overhead). */
export function promptTokenCount(messages: Message[], extra: unknown[] = []): number {
  let n = messages.length * PER_MESSAGE_OVERHEAD;
  forEachText(messages, extra, (t) => (n += countTextTokens(t)), () => (n += IMAGE_TOKEN_BOUND / 2));
  return n;
}
