/**
 * Stored Responses: one row per stored turn, owned by one account. Every lookup takes the
 * caller's account id, so another account's id reads exactly like an unknown one (404). Turns are
 * written by the ledger's store in the same transaction as their charge (never charged without
 * the turn, nor stored uncharged); the rows live in the store (ResponseRecords:
 * store/sqlite/responses.ts, store/postgres/responses.ts).
 *
 * Retention (docs/protocols.md, "Anthropic Messages and OpenAI Responses"): a turn older than the retention
 * period is gone at once for every read (GET is 404, previous_response_id and item_reference no
 * longer find it) and a periodic sweep deletes its rows. Quota: each write deletes the account's
 * oldest turns until its stored bytes are within the quota (StoredResponseRecord.quotaBytes).
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
  /**
   * Stored input and output items of this account by id (one lookup for all), of turns created at
   * or after `notBefore` (unix seconds); unknown ids are absent.
   */
  items(ids: string[], accountId: string, notBefore: number): Promise<Map<string, Json>>;
  get(id: string, accountId: string): Promise<StoredResponse | null>;
  /** True when a row of this account was deleted (its items go with it). */
  delete(id: string, accountId: string): Promise<boolean>;
  /**
   * The turns from `id` back along previous_response_id, newest first, at most `maxTurns`; empty
   * when `id` is not a response of this account. A missing (deleted) ancestor ends the walk.
   */
  chain(id: string, accountId: string, maxTurns: number): Promise<StoredResponse[]>;
  /** Deletes at most `limit` turns (any account) created before `before` (unix seconds); how many. */
  sweep(before: number, limit: number): Promise<number>;
}

export interface RetentionOptions {
  /** How long a stored turn is kept, in seconds. */
  retentionSeconds: number;
  /** The clock, in milliseconds (tests inject one). */
  now?: () => number;
}

/** Turns deleted per sweep statement; a sweep repeats until fewer are left. */
const SWEEP_BATCH = 1_000;

/** The items a stored turn makes referable by id: its input items, then its output items. */
export function itemsOf(r: { inputItems: Json[]; response: Json }): Json[] {
  return [...r.inputItems, ...((r.response.output as Json[] | undefined) ?? [])];
}

export class ResponseStore {
  private readonly now: () => number;
  private readonly retentionSeconds: number;
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly records: ResponseRecords, options: RetentionOptions) {
    this.now = options.now ?? Date.now;
    this.retentionSeconds = options.retentionSeconds;
  }

  /** The store's clock in unix seconds: a new turn's created_at. */
  nowSeconds(): number {
    return Math.floor(this.now() / 1000);
  }

  /** Turns created before this (unix seconds) have expired. */
  private cutoff(): number {
    return this.nowSeconds() - this.retentionSeconds;
  }

  items(ids: string[], accountId: string): Promise<Map<string, Json>> {
    return ids.length === 0 ? Promise.resolve(new Map()) : this.records.items(ids, accountId, this.cutoff());
  }

  async get(id: string, accountId: string): Promise<StoredResponse | null> {
    const found = await this.records.get(id, accountId);
    return found && found.createdAt >= this.cutoff() ? found : null;
  }

  delete(id: string, accountId: string): Promise<boolean> {
    return this.records.delete(id, accountId);
  }

  /**
   * The conversation up to and including response `id`: each turn's input items then its output
   * items, oldest first. Null when `id` is not a live response of this account. A deleted or
   * expired ancestor ends the walk: the conversation starts after it.
   */
  async conversation(id: string, accountId: string): Promise<Json[] | null> {
    const cutoff = this.cutoff();
    const chain = await this.records.chain(id, accountId, MAX_TURNS);
    const expired = chain.findIndex((t) => t.createdAt < cutoff);
    const turns = expired < 0 ? chain : chain.slice(0, expired);
    if (turns.length === 0) return null;
    const items: Json[] = [];
    for (let i = turns.length - 1; i >= 0; i--) items.push(...itemsOf(turns[i]!));
    return items;
  }

  /** Deletes every expired turn (in batches); how many. */
  async sweep(): Promise<number> {
    const before = this.cutoff();
    let total = 0;
    for (;;) {
      const n = await this.records.sweep(before, SWEEP_BATCH);
      total += n;
      if (n < SWEEP_BATCH) return total;
    }
  }

  /** Sweeps now and every `intervalMs`; a failed sweep (store down) is reported and retried next time. */
  startSweeping(intervalMs: number, onError: (e: unknown) => void): void {
    if (this.sweeper) return;
    const run = () => void this.sweep().catch(onError);
    run();
    this.sweeper = setInterval(run, intervalMs);
    this.sweeper.unref?.();
  }

  stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}

/** The size a turn takes in the store: the UTF-8 bytes of its input items' and response's JSON. */
export function storedSize(r: { inputItems: Json[]; response: Json }): number {
  return Buffer.byteLength(JSON.stringify(r.inputItems)) + Buffer.byteLength(JSON.stringify(r.response));
}
