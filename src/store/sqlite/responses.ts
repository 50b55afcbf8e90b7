/** Stored Responses turns and their items in the embedded SQLite database (see store/responses.ts). */
import type { Store } from "../database";
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
 * Writes a stored turn: its row, and each of its items by id (for item_reference inputs; a later
 * item with the same id replaces it). Runs inside the caller's transaction — the ledger writes a
 * turn in the same transaction as its charge.
 */
export class StoredResponseWriter {
  private readonly insertTurn;
  private readonly putItem;

  constructor(db: Store) {
    this.insertTurn = db.query("INSERT INTO responses (id, account_id, previous_response_id, input_items, response, created_at) VALUES (?, ?, ?, ?, ?, ?)");
    this.putItem = db.query("INSERT OR REPLACE INTO response_items (account_id, item_id, response_id, item) VALUES (?, ?, ?, ?)");
  }

  write(r: StoredResponse): void {
    this.insertTurn.run(r.id, r.accountId, r.previousResponseId, JSON.stringify(r.inputItems), JSON.stringify(r.response), r.createdAt);
    for (const item of itemsOf(r)) {
      if (typeof item.id === "string" && item.id !== "") this.putItem.run(r.accountId, item.id, r.id, JSON.stringify(item));
    }
  }
}

export class SqliteResponseRecords implements ResponseRecords {
  private readonly q;

  constructor(private readonly db: Store) {
    this.q = {
      item: db.query<{ item: string }, [string, string]>("SELECT item FROM response_items WHERE account_id = ? AND item_id = ?"),
      get: db.query<Row, [string, string]>("SELECT * FROM responses WHERE id = ? AND account_id = ?"),
    };
  }

  async items(ids: string[], accountId: string): Promise<Map<string, Json>> {
    const found = new Map<string, Json>();
    for (const id of ids) {
      const row = this.q.item.get(accountId, id);
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
