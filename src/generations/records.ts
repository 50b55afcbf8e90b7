/**
 * Generation records: one request as GET /v1/generation (shaped like OpenRouter's) and the
 * dashboard show it. The money, model, tokens and characters are the ledger's charge entry; the
 * HTTP status, completion and timings come from the request's recorded outcome. A request that
 * was not billed (an error, a refused hold) has an outcome but no charge: it shows cost 0.
 * Every lookup names the account, so no one reads another account's requests.
 */
import { usdNumber } from "../billing/money";
import { arrivalOfRequestId, type RequestOutcome, type RequestOutcomes } from "./outcomes";

/** A charge entry as generation records show it (amount negative, as in the ledger). */
export interface ChargeRow {
  request_id: string;
  endpoint: string | null;
  model: string | null;
  service_tier: string | null;
  amount: number;
  input_tokens: number;
  output_tokens: number;
  /** Of input_tokens, read from and written to the upstream's prompt cache. */
  cached_tokens: number;
  cache_write_tokens: number;
  /** Units the prompt cache took off the charge. */
  cache_saved: number;
  characters: number;
  reason: string | null;
  created_at: number;
}

/** Where charge entries are read (the ledger's table, in either store). */
export interface ChargeRecords {
  /** The charge of `requestId` if it is this account's. */
  charge(requestId: string, accountId: string): Promise<ChargeRow | null>;
  /** The account's newest charges, newest first. */
  recent(accountId: string, limit: number): Promise<ChargeRow[]>;
}

/** OpenRouter's api_type for each of our endpoints. */
function apiTypeOf(endpoint: string | null): string | null {
  if (endpoint === null) return null;
  if (endpoint.includes("/audio/speech")) return "tts";
  if (endpoint.includes("/embeddings")) return "embeddings";
  return "completions";
}

/** completed | cancelled (the client left; billed for what it got) | failed | null (not recorded). */
function statusOf(o: RequestOutcome | null): string | null {
  if (!o) return null;
  if (o.httpStatus >= 400 || o.outcome === "failed") return "failed";
  return o.outcome === "cancelled" ? "cancelled" : "completed";
}

export function generationView(requestId: string, charge: ChargeRow | null, outcome: RequestOutcome | null) {
  const arrival = arrivalOfRequestId(requestId);
  const createdMs = arrival ?? (charge ? charge.created_at * 1000 : 0);
  const cost = usdNumber(charge ? -charge.amount : 0);
  const endpoint = charge?.endpoint ?? outcome?.endpoint ?? null;
  return {
    id: requestId,
    created_at: new Date(createdMs).toISOString(),
    model: charge?.model ?? outcome?.model ?? null,
    endpoint,
    api_type: apiTypeOf(endpoint),
    service_tier: charge?.service_tier ?? null,
    status: statusOf(outcome),
    http_status: outcome?.httpStatus ?? null,
    streamed: outcome ? outcome.streamed : null,
    cancelled: outcome ? outcome.outcome === "cancelled" : null,
    /** Milliseconds from arrival to the end of the response body. */
    latency: outcome ? outcome.durationMs : null,
    /** Milliseconds spent waiting on the upstream or the local engine. */
    generation_time: outcome ? outcome.engineMs : null,
    tokens_prompt: charge?.input_tokens ?? 0,
    tokens_completion: charge?.output_tokens ?? 0,
    native_tokens_prompt: charge?.input_tokens ?? 0,
    native_tokens_completion: charge?.output_tokens ?? 0,
    /** Of the prompt, tokens the upstream read from and wrote to its prompt cache. */
    native_tokens_cached: charge?.cached_tokens ?? 0,
    native_tokens_cache_write: charge?.cache_write_tokens ?? 0,
    characters: charge?.characters ?? 0,
    total_cost: cost,
    /** What the prompt cache took off the cost (OpenRouter's name; negative when writes cost more than reads saved). */
    cache_discount: usdNumber(charge?.cache_saved ?? 0),
    usage: cost,
    billed: charge !== null,
    /** Set when the charge was capped at the available balance. */
    note: charge?.reason ?? null,
    is_byok: false,
    provider_name: null,
    upstream_id: null,
    finish_reason: null,
  };
}

export type GenerationView = ReturnType<typeof generationView>;

export class GenerationRecords {
  constructor(private readonly charges: ChargeRecords, private readonly outcomes: RequestOutcomes) {}

  /** One of the account's requests, or null (unknown, or another account's). */
  async get(accountId: string, requestId: string): Promise<GenerationView | null> {
    const [charge, found] = await Promise.all([this.charges.charge(requestId, accountId), this.outcomes.get(requestId)]);
    const outcome = found && found.accountId === accountId ? found : null;
    if (!charge && !outcome) return null;
    return generationView(requestId, charge, outcome);
  }

  /** The account's most recent billed requests, newest first. */
  async recent(accountId: string, limit = 50): Promise<GenerationView[]> {
    const charges = await this.charges.recent(accountId, limit);
    const outcomes = await Promise.all(charges.map((c) => this.outcomes.get(c.request_id)));
    return charges.map((c, i) => generationView(c.request_id, c, outcomes[i]!));
  }
}
