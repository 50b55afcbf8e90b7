/** Live models, upstreams and routes in the embedded SQLite database (catalog/live-records.ts). */
import type { Store } from "../database";
import type { LiveConfigRecords, LiveKind, LiveRow } from "../../catalog/live-records";
import { writeOrUnavailable } from "./failures";

export class SqliteLiveConfigRecords implements LiveConfigRecords {
  constructor(private readonly db: Store) {}

  async list(): Promise<LiveRow[]> {
    const rows = this.db.query<{ kind: LiveKind; id: string; body: string; updated_at: number }, []>(
      "SELECT kind, id, body, updated_at FROM live_config ORDER BY kind, id").all();
    return rows.map((r) => ({ kind: r.kind, id: r.id, body: r.body, updatedAt: r.updated_at }));
  }

  async put(kind: LiveKind, id: string, body: string, at: number): Promise<void> {
    const db = this.db;
    writeOrUnavailable(() =>
      db.transaction(() => {
        db.query("INSERT INTO live_config (kind, id, body, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at")
          .run(kind, id, body, at);
        db.query("UPDATE live_config_version SET version = version + 1 WHERE id = 1").run();
      }).immediate(),
    );
  }

  async remove(kind: LiveKind, id: string): Promise<boolean> {
    const db = this.db;
    return writeOrUnavailable(() =>
      db.transaction(() => {
        const changed = db.query("DELETE FROM live_config WHERE kind = ? AND id = ?").run(kind, id).changes > 0;
        if (changed) db.query("UPDATE live_config_version SET version = version + 1 WHERE id = 1").run();
        return changed;
      }).immediate(),
    );
  }

  async version(): Promise<number> {
    return (this.db.query<{ version: number }, []>("SELECT version FROM live_config_version WHERE id = 1").get()?.version) ?? 0;
  }
}
