/**
 * Stored Responses turns and their items in PostgreSQL (see store/responses.ts). Turns are
 * written by the ledger's post batch in the charge's transaction (migration 003); here they are
 * read — a whole conversation in one round trip (a recursive walk back along
 * previous_response_id) — and deleted (their items go with them, ON DELETE CASCADE), by id or
 * by the expiry sweep.
 */
import type { PgDatabase } from "./database";
import { int } from "./database";
import type { ResponseRecords, StoredResponse } from "../responses";

type Json = Record<string, unknown>;
type Row = Record<string, unknown>;

function turn(r: Row): StoredResponse {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    previousResponseId: (r.previous_response_id as string | null) ?? null,
    inputItems: JSON.parse(r.input_items as string) as Json[],
    response: JSON.parse(r.response as string) as Json,
    createdAt: int(r.created_at),
  };
}

export class PgResponseRecords implements ResponseRecords {
  constructor(private readonly db: PgDatabase) {}

  async items(ids: string[], accountId: string, notBefore: number): Promise<Map<string, Json>> {
    const rows = (await this.db.ask((sql) => sql`
      SELECT i.item_id, i.item FROM response_items i JOIN responses r ON r.id = i.response_id
       WHERE i.account_id = ${accountId} AND i.item_id = ANY(${sql.array(ids, "TEXT")}) AND r.created_at >= ${notBefore}`)) as Row[];
    return new Map(rows.map((r) => [r.item_id as string, JSON.parse(r.item as string) as Json]));
  }

  async get(id: string, accountId: string): Promise<StoredResponse | null> {
    const rows = (await this.db.ask((sql) => sql`SELECT * FROM responses WHERE id = ${id} AND account_id = ${accountId}`)) as Row[];
    return rows[0] ? turn(rows[0]) : null;
  }

  async delete(id: string, accountId: string): Promise<boolean> {
    const rows = (await this.db.ask((sql) => sql`DELETE FROM responses WHERE id = ${id} AND account_id = ${accountId} RETURNING id`)) as Row[];
    return rows.length > 0;
  }

  async sweep(before: number, limit: number): Promise<number> {
    const rows = (await this.db.ask((sql) => sql`
      DELETE FROM responses WHERE id IN (SELECT id FROM responses WHERE created_at < ${before} LIMIT ${limit}) RETURNING id`)) as Row[];
    return rows.length;
  }

  async chain(id: string, accountId: string, maxTurns: number): Promise<StoredResponse[]> {
    const rows = (await this.db.ask((sql) => sql`
      WITH RECURSIVE walk AS (
        SELECT r.*, 1 AS depth FROM responses r WHERE r.id = ${id} AND r.account_id = ${accountId}
        UNION ALL
        SELECT r.*, w.depth + 1 FROM responses r JOIN walk w ON r.id = w.previous_response_id
         WHERE r.account_id = ${accountId} AND w.depth < ${maxTurns}
      )
      SELECT id, account_id, previous_response_id, input_items, response, created_at FROM walk ORDER BY depth`)) as Row[];
    return rows.map(turn);
  }
}
