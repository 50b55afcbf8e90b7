/**
 * The chat-completions request as Switchyard reads it: `model` and `messages` are checked,
 * token limits enforced, and every other field passes through to the upstream untouched.
 */
import { Type, type Static } from "@sinclair/typebox";
import { validate } from "../validate";
import { DomainError, invalidField } from "../errors";
import { OUTPUT_CEILING, type ModelEntry } from "../catalog/catalog";
import { promptTokenBound } from "../tokens/tokens";

/** OpenAI's own bound on `n`. */
export const MAX_CHOICES = 128;

const Role = Type.Union(
  ["system", "developer", "user", "assistant", "tool", "function"].map((r) => Type.Literal(r)),
);

const ContentPart = Type.Object({ type: Type.String() }, { additionalProperties: true });

export const ChatMessage = Type.Object(
  {
    role: Role,
    content: Type.Optional(
      Type.Union([Type.String(), Type.Array(ContentPart), Type.Null()], { description: "a string, an array of content parts, or null" }),
    ),
  },
  { additionalProperties: true },
);

export const ChatCompletionRequest = Type.Object(
  {
    model: Type.String({ minLength: 1, description: "A public model id from GET /v1/models." }),
    messages: Type.Array(ChatMessage, { minItems: 1 }),
    stream: Type.Optional(Type.Boolean()),
    stream_options: Type.Optional(
      Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }), Type.Null()]),
    ),
    max_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "a positive integer or null" })),
    max_completion_tokens: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "a positive integer or null" }),
    ),
    service_tier: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    // Each choice is generated (and billed) separately, so the hold scales with them.
    n: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: MAX_CHOICES }), Type.Null()], { description: `an integer from 1 to ${MAX_CHOICES}, or null` })),
    best_of: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: MAX_CHOICES }), Type.Null()], { description: `an integer from 1 to ${MAX_CHOICES}, or null` })),
  },
  { additionalProperties: true },
);

export type ChatRequest = Static<typeof ChatCompletionRequest> & Record<string, unknown>;

export function parseChatRequest(body: unknown): ChatRequest {
  return validate(ChatCompletionRequest, body) as ChatRequest;
}

/** Asks for the priority tier: `service_tier` "priority" (or "fast"). */
export function wantsPriority(req: { service_tier?: string | null }): boolean {
  return req.service_tier === "priority" || req.service_tier === "fast";
}

export interface TokenBudget {
  /** Upper bound of prompt tokens, for the hold. */
  inputBound: number;
  /** Most output tokens the request may produce. */
  maxOutput: number;
  /**
   * Whether the prompt might not fit the context window by its cheap upper bound (UTF-8 bytes),
   * with the output asked for: only then is it worth tokenizing (contextWindowExceeded).
   */
  mayExceedContext: boolean;
}

/**
 * Enforces the output ceiling (a 400 before anything else) and returns what the hold must cover,
 * from one pass over the prompt. The context window is checked before the hold when the bound
 * says it might not fit (contextWindowExceeded), since that may need tokenizing.
 */
export function tokenBudget(req: ChatRequest, entry: ModelEntry): TokenBudget {
  const { asked, ceiling } = checkOutputCeiling(req, entry);
  const bound = promptTokenBound(req.messages, promptExtras(req));
  const reserveOutput = asked ?? ceiling;
  // Every generated sequence (n choices, or best_of candidates) can produce the full output.
  const sequences = Math.max(1, req.n ?? 1, req.best_of ?? 1);
  return {
    inputBound: Math.min(bound, entry.contextWindow),
    maxOutput: Math.min(reserveOutput, entry.contextWindow) * sequences,
    mayExceedContext: bound + (asked ?? 0) > entry.contextWindow,
  };
}

/** The request fields besides messages that reach the model's prompt. */
export function promptExtras(req: ChatRequest): unknown[] {
  return [req.tools, req.functions, req.response_format];
}

/** 400 naming the field when the output asked for is above the model's ceiling. */
export function checkOutputCeiling(req: ChatRequest, entry: ModelEntry): { asked: number | null; ceiling: number } {
  const { field, asked } = outputAsked(req);
  const ceiling = Math.min(entry.maxOutputTokens, OUTPUT_CEILING);
  if (asked !== null && asked > ceiling) {
    throw invalidField(field, `must be at most ${ceiling} (the output ceiling of this API), got ${asked}`);
  }
  return { asked, ceiling };
}

function outputAsked(req: ChatRequest): { field: string; asked: number | null } {
  const field = req.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens";
  return { field, asked: req.max_completion_tokens ?? req.max_tokens ?? null };
}

/**
 * The 400 for a prompt of `count` tokens that, with the output asked for, cannot fit; null when it
 * fits. The count may have stopped early once over the window, so the message gives no total.
 */
export function contextWindowExceeded(req: ChatRequest, entry: ModelEntry, count: number): DomainError | null {
  const { field, asked } = outputAsked(req);
  const room = entry.contextWindow - (asked ?? 0);
  if (count <= room) return null;
  return new DomainError(
    "invalid_request",
    "context_length_exceeded",
    `This model's maximum context length is ${entry.contextWindow} tokens. However, your messages resulted in more than ${Math.max(0, room)} tokens` +
      (asked ? ` and ${field} asks for ${asked} more` : "") +
      ". Please reduce the length of the messages" + (asked ? ` or ${field}.` : "."),
    "messages",
  );
}
