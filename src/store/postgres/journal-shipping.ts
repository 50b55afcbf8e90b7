/**
 * Ships the charge journal's charges (charge-journal.ts) to the database: switchyard_post_leased
 * (migration 011), one statement per instance run in the batch — nearly always one; a restarted
 * instance ships its previous run's charges against that run's leases. Each charge counts in its
 * key's period of the hold's time (billing/key-periods.ts).
 */
import type { PostRequest } from "../../billing/ledger-store";
import { nowSeconds } from "../../accounts/accounts";
import { periodStarts } from "../../billing/key-periods";
import { int, type PgDatabase } from "./database";
import type { ShipResult } from "./charge-journal";

/** A charge as journaled: with the instance run whose lease it was taken from. */
export interface JournaledCharge extends PostRequest {
  instanceId: string;
}

/** Ships journaled charges: one statement per instance run in the batch (nearly always one). */
export async function shipJournaled(db: PgDatabase, items: JournaledCharge[]): Promise<ShipResult[]> {
  const byRun = new Map<string, JournaledCharge[]>();
  for (const it of items) {
    const list = byRun.get(it.instanceId);
    if (list) list.push(it);
    else byRun.set(it.instanceId, [it]);
  }
  const results: ShipResult[] = [];
  for (const [run, list] of byRun) {
    const payload = list.map((p) => {
      const period = periodStarts(p.holdCreatedAt * 1000);
      return {
        request_id: p.requestId, account_id: p.accountId, key_id: p.keyId, amount: p.amount, held_at: p.holdCreatedAt,
        day: period.day, week: period.week, month: period.month, endpoint: p.endpoint, model: p.model, ...chargeFields(p),
      };
    });
    const rows = (await db.run((sql) => sql`
      SELECT request_id, outcome, charged FROM switchyard_post_leased(${run}, ${payload}::json, ${nowSeconds()})`)) as { request_id: string; outcome: ShipResult["outcome"]; charged: string | null }[];
    for (const r of rows) results.push({ requestId: r.request_id, outcome: r.outcome, charged: int(r.charged) });
    const fresh = new Set(rows.filter((r) => r.outcome === "posted" || r.outcome === "reduced").map((r) => r.request_id));
    await evictOverQuota(db, list.filter((p) => fresh.has(p.requestId)));
  }
  return results;
}

/**
 * After a batch, each stored turn's account is brought within its quota (oldest turns deleted
 * first, never the one just written). Its own statement, after the charge: a failure here leaves
 * the charge and the turn as they are, and the account's next stored turn evicts again.
 */
export async function evictOverQuota(db: PgDatabase, posted: PostRequest[]): Promise<void> {
  for (const p of posted) {
    const r = p.storedResponse;
    if (!r || r.quotaBytes === undefined) continue;
    await db.run((sql) => sql`SELECT switchyard_evict_responses(${r.accountId}, ${r.quotaBytes}, ${r.id})`).catch(() => {});
  }
}

/** What a charge records (tier, note, quantities, a stored turn) in a post's JSON payload: shipped or direct. */
export function chargeFields(p: PostRequest) {
  return {
    service_tier: p.serviceTier, note: p.note ?? null, input_tokens: p.inputTokens ?? 0, output_tokens: p.outputTokens ?? 0,
    cached_tokens: p.cachedTokens ?? 0, cache_write_tokens: p.cacheWriteTokens ?? 0, cache_saved: p.cacheSaved ?? 0,
    reasoning_tokens: p.reasoningTokens ?? 0, characters: p.characters ?? 0, ...storedResponseFields(p),
  };
}

/** A stored Responses turn's fields in a post's JSON payload (none without one): shipped or direct. */
export function storedResponseFields(p: PostRequest) {
  if (!p.storedResponse) return {};
  const r = p.storedResponse;
  return { resp_id: r.id, resp_account_id: r.accountId, resp_previous_id: r.previousResponseId, resp_input_items: r.inputItems, resp_body: r.response, resp_created_at: r.createdAt };
}
