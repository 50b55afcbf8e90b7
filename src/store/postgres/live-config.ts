/**
 * Live models, upstreams and routes in PostgreSQL (catalog/live-records.ts). Migration 006's
 * trigger moves the version and notifies every instance of each write (changes.ts).
 */
import type { PgDatabase } from "./database";
import { int } from "./database";
import type { LiveConfigRecords, LiveKind, LiveRow } from "../../catalog/live-records";

type Row = Record<string, unknown>;

export class PgLiveConfigRecords implements LiveConfigRecords {
  constructor(private readonly db: PgDatabase) {}

  async list(): Promise<LiveRow[]> {
    const rows = (await this.db.ask((sql) => sql`SELECT kind, id, body, updated_at FROM live_config ORDER BY kind, id`)) as Row[];
    return rows.map((r) => ({ kind: r.kind as LiveKind, id: r.id as string, body: r.body as string, updatedAt: int(r.updated_at) }));
  }

  async put(kind: LiveKind, id: string, body: string, at: number): Promise<void> {
    await this.db.ask((sql) => sql`
      INSERT INTO live_config (kind, id, body, updated_at) VALUES (${kind}, ${id}, ${body}, ${at})
      ON CONFLICT (kind, id) DO UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at`);
  }

  async remove(kind: LiveKind, id: string): Promise<boolean> {
    const rows = (await this.db.ask((sql) => sql`DELETE FROM live_config WHERE kind = ${kind} AND id = ${id} RETURNING id`)) as Row[];
    return rows.length > 0;
  }

  async version(): Promise<number> {
    const rows = (await this.db.ask((sql) => sql`SELECT version FROM live_config_version WHERE id = 1`)) as Row[];
    return rows[0] ? int(rows[0].version) : 0;
  }
}
