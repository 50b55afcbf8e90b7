/**
 * One chat request end to end: check limits of the model, hold the most it can cost, dispatch to
 * an upstream, then settle the actual cost (or release the hold on failure). Shared by
 * /v1/chat/completions, /v1/messages and /v1/responses, which only translate around it.
 */
import type { Services } from "../services";
import type { ResolvedModel } from "../catalog/catalog";
import { chatCost } from "../billing/prices";
import { formatUsd } from "../billing/money";
import { insufficientCredits, upstreamError } from "../errors";
import { dispatchChat } from "../upstream/dispatch";
import { abortWith, readAllText } from "../upstream/timeouts";
import { tokenBudget, type ChatRequest, type TokenBudget } from "./request";
import { isWellFormedCompletion } from "./upstream-shape";
import { readUsage, rewriteChatObject, deliveredText, usageDetails } from "./rewrite";
import { countTextTokens, promptTokenCount } from "./tokens";
import { ChatStream } from "./stream";
import { timeEngine } from "../metrics/engine-time";
import { prepareChatImages } from "./images";

export interface ChatCall {
  requestId: string;
  accountId: string;
  /** The API path, recorded on the ledger entry ("/v1/chat/completions"). */
  endpoint: string;
  resolved: ResolvedModel;
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
  /** Of inputTokens, served from the upstream's prompt cache (billed like any input token). */
  cachedTokens?: number;
  /** Of outputTokens, spent on reasoning (billed like any output token). */
  reasoningTokens?: number;
}

type ChatObject = Record<string, unknown>;

/** Public response id for a request id: "req_abc" → "chatcmpl-abc". */
export function completionId(requestId: string): string {
  return "chatcmpl-" + requestId.replace(/^req_/, "");
}

/** Holds the maximum cost; throws 402 when the available balance cannot cover it. */
export function reserveChat(s: Services, call: ChatCall): TokenBudget {
  const { entry, multiplier } = call.resolved;
  const budget = tokenBudget(call.request, entry);
  const amount = chatCost(entry, multiplier, { inputTokens: budget.inputBound, outputTokens: budget.maxOutput });
  const r = s.ledger.reserve({ requestId: call.requestId, accountId: call.accountId, amount, endpoint: call.endpoint, model: call.resolved.requestedId });
  if (!r.ok) throw insufficientCredits(formatUsd(amount), formatUsd(r.available));
  return budget;
}

/** The body the upstream receives: the client's fields, minus what only we interpret. */
export function upstreamBody(req: ChatRequest, stream: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { ...req, stream };
  delete body.service_tier;
  if (stream) body.stream_options = { ...(req.stream_options ?? {}), include_usage: true };
  else delete body.stream_options;
  return body;
}

export function estimateInput(req: ChatRequest): number {
  return promptTokenCount(req.messages, [req.tools, req.functions, req.response_format]);
}

export async function completeChat(s: Services, call: ChatCall): Promise<{ body: ChatObject; result: ChatResult }> {
  await prepareChatImages(s, call);
  reserveChat(s, call);
  let settled = false;
  try {
    const { response } = await timeEngine(call.requestId, dispatchChat(s, call.resolved.entry.id, call.resolved.tier, upstreamBody(call.request, false), call.signal, call.requestId));
    let json: ChatObject;
    try {
      json = JSON.parse(await timeEngine(call.requestId, readAllText(response.body))) as ChatObject;
    } catch {
      throw upstreamError();
    }
    // Checked before the charge: nothing after settle() may fail on the upstream's shape.
    if (!isWellFormedCompletion(json)) throw upstreamError();
    const usage = readUsage(json) ?? {
      prompt: estimateInput(call.request),
      completion: (json.choices as { message?: ChatObject }[]).reduce((n, c) => n + countTextTokens(deliveredText(c.message)), 0),
    };
    const cost = chatCost(call.resolved.entry, call.resolved.multiplier, { inputTokens: usage.prompt, outputTokens: usage.completion });
    const settlement = await s.ledger.settle({
      requestId: call.requestId, amount: cost, serviceTier: call.resolved.tier, inputTokens: usage.prompt, outputTokens: usage.completion,
    });
    settled = true;
    rewriteChatObject(json, { id: completionId(call.requestId), model: call.resolved.requestedId, serviceTier: call.resolved.tier });
    const result: ChatResult = { inputTokens: usage.prompt, outputTokens: usage.completion, charged: settlement.charged, serviceTier: call.resolved.tier, ...usageDetails(readUsage(json)) };
    json.usage = usageObject(json.usage, result);
    return { body: json, result };
  } finally {
    if (!settled) s.ledger.release(call.requestId);
  }
}

/** Opens a relayed stream; resolves once an upstream accepted the request (errors before that throw). */
export async function openChatStream(s: Services, call: ChatCall): Promise<ChatStream> {
  await prepareChatImages(s, call);
  reserveChat(s, call);
  try {
    // Aborted by the client going away or by the stream's own cancel/failure.
    const upstream = new AbortController();
    abortWith(call.signal, upstream);
    const { response } = await timeEngine(call.requestId, dispatchChat(s, call.resolved.entry.id, call.resolved.tier, upstreamBody(call.request, true), upstream.signal, call.requestId));
    return new ChatStream(s, call, response, upstream);
  } catch (err) {
    s.ledger.release(call.requestId);
    throw err;
  }
}

/** The usage object we return: the upstream's fields where present, our exact totals and cost. */
export function usageObject(upstreamUsage: unknown, r: ChatResult) {
  const base = upstreamUsage && typeof upstreamUsage === "object" ? (upstreamUsage as ChatObject) : {};
  const details: ChatObject = {};
  if (r.cachedTokens !== undefined) details.prompt_tokens_details = { ...(base.prompt_tokens_details as ChatObject | undefined), cached_tokens: r.cachedTokens };
  if (r.reasoningTokens !== undefined) details.completion_tokens_details = { ...(base.completion_tokens_details as ChatObject | undefined), reasoning_tokens: r.reasoningTokens };
  return {
    ...base,
    ...details,
    prompt_tokens: r.inputTokens,
    completion_tokens: r.outputTokens,
    total_tokens: r.inputTokens + r.outputTokens,
    cost: Number(formatUsd(r.charged)),
  };
}
