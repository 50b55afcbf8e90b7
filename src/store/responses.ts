/**
 * Stored Responses: one row per stored turn, owned by one account. Every lookup takes the
 * caller's account id, so another account's id reads exactly like an unknown one (404).
 */
import type { Store } from "./database";

type Json = Record<string, unknown>;

export interface StoredResponse {
  id: string;
  accountId: string;
  previousResponseId: string | null;
  inputItems: Json[];
  response: Json;
  createdAt: number;
}

interface Row {
  id: string;
  account_id: string;
  previous_response_id: string | null;
  input_items: string;
  response: string;
  created_at: number;
}

/** Guards the walk back through previous_response_id links (a cycle cannot be stored, but still). */
const MAX_TURNS = 10_000;

export class ResponseStore {
  constructor(private readonly db: Store) {}

  save(r: StoredResponse): void {
    this.db.transaction(() => {
      this.db
        .query("INSERT INTO responses (id, account_id, previous_response_id, input_items, response, created_at) VALUES (?, ?, ?, ?, ?, ?)")
        .run(r.id, r.accountId, r.previousResponseId, JSON.stringify(r.inputItems), JSON.stringify(r.response), r.createdAt);
      // Items by id, for item_reference inputs; a later item with the same id replaces it.
      const put = this.db.query("INSERT OR REPLACE INTO response_items (account_id, item_id, response_id, item) VALUES (?, ?, ?, ?)");
      for (const item of [...r.inputItems, ...((r.response.output as Json[] | undefined) ?? [])]) {
        if (typeof item.id === "string" && item.id !== "") put.run(r.accountId, item.id, r.id, JSON.stringify(item));
      }
    })();
  }

  /** A stored input or output item of this account by its id, or null (another account's reads as unknown). */
  item(itemId: string, accountId: string): Json | null {
    const row = this.db.query("SELECT item FROM response_items WHERE account_id = ? AND item_id = ?").get(accountId, itemId) as { item: string } | null;
    return row ? (JSON.parse(row.item) as Json) : null;
  }

  get(id: string, accountId: string): StoredResponse | null {
    const row = this.db.query("SELECT * FROM responses WHERE id = ? AND account_id = ?").get(id, accountId) as Row | null;
    return row ? fromRow(row) : null;
  }

  /** True when a row of this account was deleted. */
  delete(id: string, accountId: string): boolean {
    return this.db.query("DELETE FROM responses WHERE id = ? AND account_id = ?").run(id, accountId).changes > 0;
  }

  /**
   * The conversation up to and including response `id`: each turn's input items then its output
   * items, oldest first. Null when `id` is not a response of this account. A deleted ancestor
   * ends the walk: the conversation starts after it.
   */
  conversation(id: string, accountId: string): Json[] | null {
    const turns: StoredResponse[] = [];
    let next: string | null = id;
    while (next && turns.length < MAX_TURNS) {
      const turn = this.get(next, accountId);
      if (!turn) {
        if (turns.length === 0) return null;
        break;
      }
      turns.push(turn);
      next = turn.previousResponseId;
    }
    const items: Json[] = [];
    for (const t of turns.reverse()) items.push(...t.inputItems, ...((t.response.output as Json[] | undefined) ?? []));
    return items;
  }
}

function fromRow(row: Row): StoredResponse {
  return {
    id: row.id,
    accountId: row.account_id,
    previousResponseId: row.previous_response_id,
    inputItems: JSON.parse(row.input_items) as Json[],
    response: JSON.parse(row.response) as Json,
    createdAt: row.created_at,
  };
}
