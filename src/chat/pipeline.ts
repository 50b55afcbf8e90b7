/**
 * One chat request end to end: check limits of the model, then one metered call (metering/): hold
 * the most it can cost, dispatch to an upstream, charge the actual cost (or release the hold on
 * any other path). Shared by /v1/chat/completions, /v1/messages and /v1/responses, which only
 * translate around it.
 */
import type { Config } from "../config";
import type { Ledger } from "../billing/ledger";
import { chatBudget, chatPricing, priceNote } from "../billing/prices";
import { usdNumber } from "../billing/money";
import { clientGone, upstreamError } from "../errors";
import type { Quote } from "../billing/hold";
import type { Consumption, StoredResponseRecord } from "../billing/ledger-store";
import { meterWhole, openMetered, type CallSpec, type MeteredCall } from "../metering/metered-call";
import { completionId, countUsage, estimateInput, type ChatCall, type ChatResult } from "./call";
import { CountAborted } from "../tokens/token-counter";
import { dispatchChat, type ChatDispatch } from "../upstream/dispatch";
import { abortWith, BodyTooLarge, readBoundedText } from "../upstream/http1/client";
import { contextWindowExceeded, tokenBudget, type ChatRequest, type TokenBudget } from "./request";
import { isWellFormedCompletion } from "./upstream-shape";
import { readUsage, rewriteChatObject, deliveredText } from "./rewrite";
import { ChatStream, type ChatStreamDeps } from "./stream";
import { timeEngine } from "../metrics/engine-time";
import { prepareChatMedia, type ChatMediaDeps } from "./media";

type ChatObject = Record<string, unknown>;

/**
 * What a chat call uses: the ledger (its hold and charge), dispatch to the upstreams, the
 * stream's relay, media preparation and the bound on a plain reply.
 */
export type ChatPipelineDeps = ChatDispatch & ChatStreamDeps & ChatMediaDeps & {
  ledger: Ledger;
  config: Pick<Config, "upstreamMaxResponseBytes">;
};

/**
 * The metered call of a chat: it holds the most the request can cost (the prompt's bound and the
 * output cap, × n) before any upstream is called — 402 when the available balance cannot cover
 * it, 503 when the ledger cannot write.
 */
export function chatCallSpec(call: ChatCall, budget: TokenBudget): CallSpec {
  const { entry, multiplier } = call.resolved;
  return {
    requestId: call.requestId,
    accountId: call.accountId,
    endpoint: call.endpoint,
    model: call.resolved.requestedId,
    key: call.key,
    serviceTier: call.resolved.tier,
    budget: chatBudget(entry, budget.inputBound, budget.maxOutput),
    price: chatPricing(entry, multiplier),
    priceNote: priceNote(entry, multiplier),
  };
}

/** What a chat's usage costs on its hold (clamped to it), as the protocols report it. */
export function chatResult(metered: { quote(usage: Consumption): Quote }, usage: Consumption, serviceTier: ChatResult["serviceTier"]): ChatResult {
  const q = metered.quote(usage);
  const inputTokens = q.recorded.inputTokens ?? 0;
  const outputTokens = q.recorded.outputTokens ?? 0;
  const result: ChatResult = { inputTokens, outputTokens, charged: q.amount, serviceTier };
  // The details are parts of the totals: a clamped total clamps its part too.
  if (usage.cachedTokens !== undefined) result.cachedTokens = Math.min(usage.cachedTokens, inputTokens);
  if (usage.cacheWriteTokens !== undefined) result.cacheWriteTokens = Math.min(usage.cacheWriteTokens, inputTokens - (result.cachedTokens ?? 0));
  if (usage.reasoningTokens !== undefined) result.reasoningTokens = Math.min(usage.reasoningTokens, outputTokens);
  return result;
}

/** The body the upstream receives: the client's fields, minus what only we interpret. */
export function upstreamBody(req: ChatRequest, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { ...req, stream };
  delete body.service_tier;
  if (stream) body.stream_options = { ...(req.stream_options ?? {}), include_usage: true };
  else delete body.stream_options;
  return body;
}

/** 400 context_length_exceeded when the prompt cannot fit (asked only when the cheap bound says it might not). */
async function checkContextWindow(s: ChatPipelineDeps, call: ChatCall): Promise<void> {
  let count: number;
  try {
    count = await estimateInput(s, call, true);
  } catch (err) {
    if (err instanceof CountAborted) throw clientGone();
    throw err;
  }
  const err = contextWindowExceeded(call.request, call.resolved.entry, count);
  if (err) throw err;
}

/**
 * The checks and rewrites before the hold: the context window (only when the cheap bound says the
 * prompt might not fit) and media parts (only when some message has content parts). Nothing to
 * wait for in the usual case, and then no promise either.
 */
function beforeHold(s: ChatPipelineDeps, call: ChatCall, budget: TokenBudget): Promise<void> | undefined {
  const checkContext = budget.mayExceedContext;
  const images = hasContentParts(call.request.messages);
  if (!checkContext && !images) return undefined;
  return (async () => {
    if (checkContext) await checkContextWindow(s, call);
    if (images) await prepareChatMedia(s, call);
  })();
}

function hasContentParts(messages: { content?: unknown }[]): boolean {
  for (let i = 0; i < messages.length; i++) if (Array.isArray(messages[i]!.content)) return true;
  return false;
}

/**
 * A plain chat call: hold, dispatch, check the reply, then charge. `present` turns the rewritten
 * chat body and its cost into what the route returns, and may name a stored response to write in
 * the charge's own transaction.
 */
export async function completeChat<T>(
  s: ChatPipelineDeps,
  call: ChatCall,
  present: (chat: ChatObject, result: ChatResult) => { value: T; storedResponse?: StoredResponseRecord },
): Promise<{ value: T; result: ChatResult }> {
  const budget = tokenBudget(call.request, call.resolved.entry);
  const before = beforeHold(s, call, budget);
  if (before) await before;
  const { value, settlement } = await meterWhole(s.ledger, chatCallSpec(call, budget), async (metered) => {
    const { response } = await timeEngine(call.requestId, dispatchChat(s, call.resolved.entry.id, call.resolved.tier, upstreamBody(call.request, false), call.signal, call.requestId, call.accountId));
    let json: ChatObject;
    try {
      // Bounded: a reply past SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES stops being read there (its
      // connection closes) and ends in a 502, unbilled.
      json = JSON.parse(await timeEngine(call.requestId, readBoundedText(response.body, s.config.upstreamMaxResponseBytes))) as ChatObject;
    } catch (err) {
      if (err instanceof BodyTooLarge) s.log.warn("upstream reply too large", { request_id: call.requestId, limit_bytes: s.config.upstreamMaxResponseBytes });
      throw upstreamError();
    }
    // Checked before the charge: nothing after it may fail on the upstream's shape.
    if (!isWellFormedCompletion(json)) throw upstreamError();
    // A complete body cannot be cut any more: usage beyond the hold is clamped to it (and logged).
    const usage: Consumption = readUsage(json) ?? (await countUsage(s, call, s.tokens.count((json.choices as { message?: ChatObject }[]).map((c) => deliveredText(c.message)), { account: call.accountId })));
    const result = chatResult(metered, usage, call.resolved.tier);
    rewriteChatObject(json, { id: completionId(call.requestId), model: call.resolved.requestedId, serviceTier: call.resolved.tier });
    json.usage = usageObject(json.usage, result);
    const { value, storedResponse } = present(json, result);
    return { usage, storedResponse, value: { value, result } };
  });
  return { value: value.value, result: { ...value.result, charged: settlement.charged } };
}

/**
 * Opens a relayed stream: holds, then dispatches; resolves once an upstream accepted the request
 * (errors before that throw, the hold released). The stream then owns the metered call: it is run
 * by runMeteredStream, whose finally releases it.
 */
export async function openChatStream(s: ChatPipelineDeps, call: ChatCall): Promise<{ metered: MeteredCall; stream: ChatStream }> {
  const budget = tokenBudget(call.request, call.resolved.entry);
  const before = beforeHold(s, call, budget);
  if (before) await before;
  const { call: metered, stream } = await openMetered(s.ledger, chatCallSpec(call, budget), async () => {
    // Aborted by the client going away or by the stream's own cancel/failure.
    const upstream = new AbortController();
    abortWith(call.signal, upstream);
    const { response } = await timeEngine(call.requestId, dispatchChat(s, call.resolved.entry.id, call.resolved.tier, upstreamBody(call.request, true), upstream.signal, call.requestId, call.accountId));
    return new ChatStream(s, call, response, upstream, budget);
  });
  return { metered, stream };
}

/** The usage object we return: the upstream's fields where present, our exact totals and cost. */
export function usageObject(upstreamUsage: unknown, r: ChatResult) {
  const base = upstreamUsage && typeof upstreamUsage === "object" ? (upstreamUsage as ChatObject) : {};
  const details: ChatObject = {};
  if (r.cachedTokens !== undefined || r.cacheWriteTokens !== undefined) {
    // OpenAI's field for reads; OpenRouter's for writes, where the upstream reported any.
    details.prompt_tokens_details = {
      ...(base.prompt_tokens_details as ChatObject | undefined),
      ...(r.cachedTokens !== undefined ? { cached_tokens: r.cachedTokens } : {}),
      ...(r.cacheWriteTokens !== undefined ? { cache_write_tokens: r.cacheWriteTokens } : {}),
    };
  }
  if (r.reasoningTokens !== undefined) details.completion_tokens_details = { ...(base.completion_tokens_details as ChatObject | undefined), reasoning_tokens: r.reasoningTokens };
  return {
    ...base,
    ...details,
    prompt_tokens: r.inputTokens,
    completion_tokens: r.outputTokens,
    total_tokens: r.inputTokens + r.outputTokens,
    cost: usdNumber(r.charged),
  };
}
