/**
 * Generation records: one request as GET /v1/generation (shaped like OpenRouter's) and the
 * dashboard show it. The money, model, tokens and characters are the ledger's charge entry; the
 * HTTP status, completion and timings come from the request's recorded outcome. A request that
 * was not billed (an error, a refused hold) has an outcome but no charge: it shows cost 0.
 * Every lookup names the account, so no one reads another account's requests.
 */
import type { Store } from "../store/database";
import { usdNumber } from "../billing/money";
import { arrivalOfRequestId, type RequestOutcome, type RequestOutcomes } from "./outcomes";

interface ChargeRow {
  request_id: string;
  endpoint: string | null;
  model: string | null;
  service_tier: string | null;
  amount: number;
  input_tokens: number;
  output_tokens: number;
  characters: number;
  reason: string | null;
  created_at: number;
}

const CHARGE_COLUMNS = "request_id, endpoint, model, service_tier, amount, input_tokens, output_tokens, characters, reason, created_at";

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
  const cost = charge ? usdNumber(-charge.amount) : 0;
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
    characters: charge?.characters ?? 0,
    total_cost: cost,
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
  private readonly q;

  constructor(db: Store, private readonly outcomes: RequestOutcomes) {
    this.q = {
      // kind = 'charge' lets SQLite use the unique partial index on request_id.
      charge: db.query<ChargeRow, [string, string]>(
        `SELECT ${CHARGE_COLUMNS} FROM ledger_entries WHERE request_id = ? AND kind = 'charge' AND account_id = ?`,
      ),
      recent: db.query<ChargeRow, [string, number]>(
        `SELECT ${CHARGE_COLUMNS} FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY created_at DESC, id DESC LIMIT ?`,
      ),
    };
  }

  /** One of the account's requests, or null (unknown, or another account's). */
  get(accountId: string, requestId: string): GenerationView | null {
    const charge = this.q.charge.get(requestId, accountId);
    const found = this.outcomes.get(requestId);
    const outcome = found && found.accountId === accountId ? found : null;
    if (!charge && !outcome) return null;
    return generationView(requestId, charge, outcome);
  }

  /** The account's most recent billed requests, newest first. */
  recent(accountId: string, limit = 50): GenerationView[] {
    return this.q.recent.all(accountId, limit).map((c) => generationView(c.request_id, c, this.outcomes.get(c.request_id)));
  }
}
