/**
 * The token-counting worker thread (see token-counter.ts): counts the texts of one job at a time
 * and answers with the sum. Loading the tokenizer here costs the thread ~100 MB, once.
 */
import { countTexts } from "./tokens";

export type TokenJob = { id: number; texts: string[]; limit: number | null };
export type TokenReply = { ready: true } | { id: number; count: number } | { id: number; error: string };

declare const self: Worker;

self.onmessage = (e: MessageEvent<TokenJob>) => {
  const { id, texts, limit } = e.data;
  let reply: TokenReply;
  try {
    reply = { id, count: countTexts(texts, limit ?? Infinity) };
  } catch (err) {
    reply = { id, error: String((err as Error)?.message ?? err) };
  }
  self.postMessage(reply);
};

// Tells the counter that this file loaded: a worker that dies before this was never started.
self.postMessage({ ready: true } satisfies TokenReply);
