/**
 * Request outcomes in the embedded SQLite database (see generations/outcomes.ts). A batch is
 * committed with synchronous=NORMAL for that commit only, like the group commit's deferred sync,
 * so its rows ride on the next charge's WAL fsync; a durable batch (shutdown) syncs itself.
 */
import type { Store } from "../database";
import type { OutcomeRecords, RequestEnd, RequestOutcome } from "../../generations/outcomes";

interface OutcomeRow {
  request_id: string;
  account_id: string;
  key_id: string | null;
  endpoint: string;
  model: string;
  http_status: number;
  outcome: string;
  streamed: number;
  duration_ms: number;
  engine_ms: number;
}

export class SqliteOutcomeRecords implements OutcomeRecords {
  private readonly q;
  private readonly writeAll: (rows: RequestOutcome[]) => void;

  constructor(private readonly db: Store) {
    const insert = db.query(
      `INSERT OR REPLACE INTO request_outcomes (request_id, account_id, key_id, endpoint, model, http_status, outcome, streamed, duration_ms, engine_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.q = {
      byId: db.query<OutcomeRow, [string]>("SELECT * FROM request_outcomes WHERE request_id = ?"),
      // Request ids sort by arrival time (see requestIdBefore), so this is a range on the key.
      sweep: db.query("DELETE FROM request_outcomes WHERE request_id < ?"),
      synchronous: db.query<{ synchronous: number }, []>("PRAGMA synchronous"),
    };
    // Built once: bun:sqlite's db.transaction() makes a new wrapper per call.
    this.writeAll = db.transaction((rows: RequestOutcome[]) => {
      for (const o of rows) {
        insert.run(o.requestId, o.accountId, o.keyId ?? null, o.endpoint, o.model, o.httpStatus, o.outcome, o.streamed ? 1 : 0, o.durationMs, o.engineMs);
      }
    });
  }

  write(rows: RequestOutcome[], durable: boolean): boolean {
    // The ledger's group commit has a transaction open: the rows wait for the next tick.
    if (this.db.inTransaction) return false;
    const level = this.q.synchronous.get()!.synchronous;
    // No fsync of its own: the next durable ledger commit syncs the whole WAL, these rows too.
    if (!durable && level >= 2) this.db.run("PRAGMA synchronous = NORMAL");
    try {
      this.writeAll(rows);
    } finally {
      if (!durable && level >= 2) this.db.run(`PRAGMA synchronous = ${level}`);
    }
    return true;
  }

  async get(requestId: string): Promise<RequestOutcome | null> {
    const row = this.q.byId.get(requestId);
    return row ? fromRow(row) : null;
  }

  sweep(beforeId: string): void {
    this.q.sweep.run(beforeId);
  }
}

function fromRow(r: OutcomeRow): RequestOutcome {
  return {
    requestId: r.request_id, accountId: r.account_id, keyId: r.key_id, endpoint: r.endpoint, model: r.model, httpStatus: r.http_status,
    outcome: r.outcome as RequestEnd, streamed: r.streamed === 1, durationMs: r.duration_ms, engineMs: r.engine_ms,
  };
}
