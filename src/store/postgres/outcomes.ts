/**
 * Request outcomes in PostgreSQL (see generations/outcomes.ts): a second's rows in one statement,
 * committed with synchronous_commit off — nothing about money is here, and a crash of the
 * database may lose the last rows, as SQLite's deferred sync may.
 */
import type { PgDatabase } from "./database";
import { int } from "./database";
import type { OutcomeRecords, RequestEnd, RequestOutcome } from "../../generations/outcomes";

type Row = Record<string, unknown>;

export class PgOutcomeRecords implements OutcomeRecords {
  constructor(private readonly db: PgDatabase) {}

  async write(rows: RequestOutcome[], durable: boolean): Promise<boolean> {
    const payload = rows.map((o) => ({
      request_id: o.requestId, account_id: o.accountId, key_id: o.keyId ?? null, endpoint: o.endpoint, model: o.model, http_status: o.httpStatus,
      outcome: o.outcome, streamed: o.streamed ? 1 : 0, duration_ms: o.durationMs, engine_ms: o.engineMs,
    }));
    // Rows come from a map by request id: no id twice in one statement.
    await this.db.run((sql) => sql.begin(async (tx) => {
      if (!durable) await tx`SELECT set_config('synchronous_commit', 'off', true)`;
      await tx`
        INSERT INTO request_outcomes (request_id, account_id, key_id, endpoint, model, http_status, outcome, streamed, duration_ms, engine_ms)
        SELECT x.request_id, x.account_id, x.key_id, x.endpoint, x.model, x.http_status, x.outcome, x.streamed, x.duration_ms, x.engine_ms
          FROM json_to_recordset(${payload}::json) AS x(
            request_id TEXT, account_id TEXT, key_id TEXT, endpoint TEXT, model TEXT, http_status INTEGER, outcome TEXT,
            streamed SMALLINT, duration_ms BIGINT, engine_ms BIGINT)
        ON CONFLICT (request_id) DO UPDATE SET
          account_id = EXCLUDED.account_id, key_id = EXCLUDED.key_id, endpoint = EXCLUDED.endpoint, model = EXCLUDED.model,
          http_status = EXCLUDED.http_status, outcome = EXCLUDED.outcome, streamed = EXCLUDED.streamed,
          duration_ms = EXCLUDED.duration_ms, engine_ms = EXCLUDED.engine_ms`;
    }));
    return true;
  }

  async get(requestId: string): Promise<RequestOutcome | null> {
    const rows = (await this.db.ask((sql) => sql`SELECT * FROM request_outcomes WHERE request_id = ${requestId}`)) as Row[];
    const r = rows[0];
    if (!r) return null;
    return {
      requestId: r.request_id as string, accountId: r.account_id as string, keyId: (r.key_id as string | null) ?? null, endpoint: r.endpoint as string, model: r.model as string,
      httpStatus: int(r.http_status), outcome: r.outcome as RequestEnd, streamed: int(r.streamed) === 1,
      durationMs: int(r.duration_ms), engineMs: int(r.engine_ms),
    };
  }

  async sweep(beforeId: string): Promise<void> {
    await this.db.run((sql) => sql`DELETE FROM request_outcomes WHERE request_id < ${beforeId}`);
  }
}
