import type { PgMigration } from "./index";

/** The counterpart of src/store/migrations/007-request-log.ts: the request's key and the log's indexes. */
export const requestLog: PgMigration = {
  version: 7,
  name: "request_log",
  sql: `
ALTER TABLE request_outcomes ADD COLUMN key_id TEXT;
CREATE INDEX request_outcomes_account ON request_outcomes(account_id, request_id);
CREATE INDEX request_outcomes_key ON request_outcomes(key_id, request_id);
CREATE INDEX ledger_charges_time ON ledger_entries(created_at, account_id, model, amount) WHERE kind = 'charge';
`,
};
