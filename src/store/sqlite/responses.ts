/** Stored Responses turns and their items in the embedded SQLite database (see store/responses.ts). */
import type { Store } from "../database";
import type { StoredResponseRecord } from "../../billing/ledger-store";
import { itemsOf, type ResponseRecords, type StoredResponse } from "../responses";
import { writeOrUnavailable } from "./failures";

type Json = Record<string, unknown>;

interface Row {
  id: string;
  account_id: string;
  previous_response_id: string | null;
  input_items: string;
  response: string;
  created_at: number;
}

/**
 * Writes a stored turn: its row (with its size), and each of its items by id (for item_reference
 * inputs; a later item with the same id replaces it); then, past the account's quota, deletes the
 * account's oldest turns (never this one) until it is within it. Runs inside the caller's
 * transaction — the ledger writes a turn in the same transaction as its charge.
 */
export class StoredResponseWriter {
  private readonly insertTurn;
  private readonly putItem;
  private readonly total;
  private readonly oldest;
  private readonly deleteTurn;

  constructor(db: Store) {
    this.insertTurn = db.query("INSERT INTO responses (id, account_id, previous_response_id, input_items, response, created_at, size) VALUES (?, ?, ?, ?, ?, ?, ?)");
    this.putItem = db.query("INSERT OR REPLACE INTO response_items (account_id, item_id, response_id, item) VALUES (?, ?, ?, ?)");
    this.total = db.query<{ total: number }, [string]>("SELECT COALESCE(SUM(size), 0) AS total FROM responses WHERE account_id = ?");
    this.oldest = db.query<{ id: string; size: number }, [string, string]>(
      "SELECT id, size FROM responses WHERE account_id = ? AND id <> ? ORDER BY created_at, rowid LIMIT 100");
    this.deleteTurn = db.query("DELETE FROM responses WHERE id = ?");
  }

  write(r: StoredResponseRecord): void {
    const input = JSON.stringify(r.inputItems);
    const response = JSON.stringify(r.response);
    this.insertTurn.run(r.id, r.accountId, r.previousResponseId, input, response, r.createdAt, Buffer.byteLength(input) + Buffer.byteLength(response));
    for (const item of itemsOf(r)) {
      if (typeof item.id === "string" && item.id !== "") this.putItem.run(r.accountId, item.id, r.id, JSON.stringify(item));
    }
    if (r.quotaBytes !== undefined) this.evict(r.accountId, r.quotaBytes, r.id);
  }

  private evict(accountId: string, quota: number, keep: string): void {
    let total = this.total.get(accountId)!.total;
    while (total > quota) {
      const batch = this.oldest.all(accountId, keep);
      if (batch.length === 0) return;
      for (const old of batch) {
        if (total <= quota) return;
        this.deleteTurn.run(old.id);
        total -= old.size;
      }
    }
  }
}

export class SqliteResponseRecords implements ResponseRecords {
  private readonly q;

  constructor(private readonly db: Store) {
    this.q = {
      get: db.query<Row, [string, string]>("SELECT * FROM responses WHERE id = ? AND account_id = ?"),
      itemOf: db.query<{ item: string }, [string, string, number]>(
        "SELECT i.item FROM response_items i JOIN responses r ON r.id = i.response_id WHERE i.account_id = ? AND i.item_id = ? AND r.created_at >= ?"),
      sweep: db.query("DELETE FROM responses WHERE id IN (SELECT id FROM responses WHERE created_at < ? LIMIT ?)"),
    };
  }

  async items(ids: string[], accountId: string, notBefore: number): Promise<Map<string, Json>> {
    const found = new Map<string, Json>();
    for (const id of ids) {
      const row = this.q.itemOf.get(accountId, id, notBefore);
      if (row) found.set(id, JSON.parse(row.item) as Json);
    }
    return found;
  }

  async get(id: string, accountId: string): Promise<StoredResponse | null> {
    const row = this.q.get.get(id, accountId);
    return row ? fromRow(row) : null;
  }

  async delete(id: string, accountId: string): Promise<boolean> {
    return writeOrUnavailable(() => this.db.query("DELETE FROM responses WHERE id = ? AND account_id = ?").run(id, accountId).changes > 0);
  }

  async sweep(before: number, limit: number): Promise<number> {
    return writeOrUnavailable(() => this.q.sweep.run(before, limit).changes);
  }

  async chain(id: string, accountId: string, maxTurns: number): Promise<StoredResponse[]> {
    const turns: StoredResponse[] = [];
    let next: string | null = id;
    while (next && turns.length < maxTurns) {
      const row = this.q.get.get(next, accountId);
      if (!row) break;
      const turn = fromRow(row);
      turns.push(turn);
      next = turn.previousResponseId;
    }
    return turns;
  }
}

export function fromRow(row: Row): StoredResponse {
  return {
    id: row.id,
    accountId: row.account_id,
    previousResponseId: row.previous_response_id,
    inputItems: JSON.parse(row.input_items) as Json[],
    response: JSON.parse(row.response) as Json,
    createdAt: Number(row.created_at),
  };
}
