/**
 * What every part of a chat request shares (the pipeline, the relayed stream, the routes and the
 * protocol translators): the call itself, its result, its public id, and its token estimates.
 * A leaf: it imports neither chat/pipeline.ts nor chat/stream.ts.
 */
import type { ResolvedModel } from "../catalog/catalog";
import { promptExtras, type ChatRequest } from "./request";
import type { ReportedUsage } from "./rewrite";
import type { HoldSpec } from "../billing/hold";
import type { TokenCounter } from "../tokens/token-counter";

/** Token counting, in worker threads, the accounts taking turns (tokens/token-counter.ts). */
export interface TokenCounting {
  tokens: TokenCounter;
}

export interface ChatCall {
  requestId: string;
  accountId: string;
  /** The API path, recorded on the ledger entry ("/v1/chat/completions"). */
  endpoint: string;
  resolved: ResolvedModel;
  /** The key the request was made with (its spend limit bounds the hold). */
  key?: HoldSpec["key"];
  request: ChatRequest;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

export interface ChatResult {
  inputTokens: number;
  outputTokens: number;
  /** Units actually charged. */
  charged: number;
  serviceTier: "default" | "priority";
  /** Of inputTokens, read from the upstream's prompt cache (billed at the cached-input price, if the model has one). */
  cachedTokens?: number;
  /** Of inputTokens, written to the upstream's prompt cache (billed at the cache-write price, if the model has one). */
  cacheWriteTokens?: number;
  /** Of outputTokens, spent on reasoning (billed like any output token). */
  reasoningTokens?: number;
}

/** Public response id for a request id: "req_abc" → "chatcmpl-abc". */
export function completionId(requestId: string): string {
  return "chatcmpl-" + (requestId.startsWith("req_") ? requestId.slice(4) : requestId);
}

const inputEstimates = new WeakMap<ChatRequest, Promise<number>>();
/** Estimates counted already, by request. */
const knownInputs = new WeakMap<ChatRequest, number>();

/** The prompt's estimate if it has been counted already (a context check did), else undefined: never waits. */
export function knownInput(call: Pick<ChatCall, "request">): number | undefined {
  return knownInputs.get(call.request);
}

/**
 * The prompt's estimated tokens, counted once per request (the context check, a Messages stream's
 * message_start and a usage fallback all ask) and off the event loop when long. Counting stops
 * once past the context window: exact for every prompt that fits, "more" for the others. The count
 * waits in the account's lane; `admission` (a check before the request is admitted) makes it
 * refusable when the account has too much queued (see src/tokens/token-counter.ts).
 */
export function estimateInput(s: TokenCounting, call: Pick<ChatCall, "request" | "resolved" | "signal" | "accountId">, admission = false): Promise<number> {
  let estimate = inputEstimates.get(call.request);
  if (!estimate) {
    const req = call.request;
    estimate = s.tokens.prompt(req.messages, promptExtras(req), { limit: call.resolved.entry.contextWindow, signal: call.signal, account: call.accountId, admission });
    inputEstimates.set(req, estimate);
    estimate.then((n) => knownInputs.set(req, n), () => {});
    // A count abandoned with its client is not remembered: a later caller counts afresh.
    estimate.catch(() => inputEstimates.delete(req));
  }
  return estimate;
}

/** Our own count of a request's usage, for an upstream that reported none: both counts at once. */
export async function countUsage(s: TokenCounting, call: ChatCall, output: Promise<number>): Promise<ReportedUsage> {
  const [inputTokens, outputTokens] = await Promise.all([estimateInput(s, { ...call, signal: new AbortController().signal }), output]);
  return { inputTokens, outputTokens };
}
