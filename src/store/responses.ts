/**
 * Stored Responses: one row per stored turn, owned by one account. Every lookup takes the
 * caller's account id, so another account's id reads exactly like an unknown one (404). Turns are
 * written by the ledger's store in the same transaction as their charge (never charged without
 * the turn, nor stored uncharged); the rows live in the store (ResponseRecords:
 * store/sqlite/responses.ts, store/postgres/responses.ts).
 */

type Json = Record<string, unknown>;

export interface StoredResponse {
  id: string;
  accountId: string;
  previousResponseId: string | null;
  inputItems: Json[];
  response: Json;
  createdAt: number;
}

/** Guards the walk back through previous_response_id links (a cycle cannot be stored, but still). */
export const MAX_TURNS = 10_000;

/** Where stored turns are kept. */
export interface ResponseRecords {
  /** Stored input and output items of this account by id (one lookup for all); unknown ids are absent. */
  items(ids: string[], accountId: string): Promise<Map<string, Json>>;
  get(id: string, accountId: string): Promise<StoredResponse | null>;
  /** True when a row of this account was deleted (its items go with it). */
  delete(id: string, accountId: string): Promise<boolean>;
  /**
   * The turns from `id` back along previous_response_id, newest first, at most `maxTurns`; empty
   * when `id` is not a response of this account. A missing (deleted) ancestor ends the walk.
   */
  chain(id: string, accountId: string, maxTurns: number): Promise<StoredResponse[]>;
}

/** The items a stored turn makes referable by id: its input items, then its output items. */
export function itemsOf(r: { inputItems: Json[]; response: Json }): Json[] {
  return [...r.inputItems, ...((r.response.output as Json[] | undefined) ?? [])];
}

export class ResponseStore {
  constructor(private readonly records: ResponseRecords) {}

  items(ids: string[], accountId: string): Promise<Map<string, Json>> {
    return ids.length === 0 ? Promise.resolve(new Map()) : this.records.items(ids, accountId);
  }

  get(id: string, accountId: string): Promise<StoredResponse | null> {
    return this.records.get(id, accountId);
  }

  delete(id: string, accountId: string): Promise<boolean> {
    return this.records.delete(id, accountId);
  }

  /**
   * The conversation up to and including response `id`: each turn's input items then its output
   * items, oldest first. Null when `id` is not a response of this account. A deleted ancestor
   * ends the walk: the conversation starts after it.
   */
  async conversation(id: string, accountId: string): Promise<Json[] | null> {
    const turns = await this.records.chain(id, accountId, MAX_TURNS);
    if (turns.length === 0) return null;
    const items: Json[] = [];
    for (let i = turns.length - 1; i >= 0; i--) items.push(...itemsOf(turns[i]!));
    return items;
  }
}
