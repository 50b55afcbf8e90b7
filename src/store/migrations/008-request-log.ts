import type { Migration } from "./index";

/**
 * The operator's request log and revenue overview (docs/dashboard.md): the key each request was
 * made with, and indexes for the log's filters (account, key; time is the request id's range)
 * and for sums of charges across accounts over a time range.
 */
export const requestLog: Migration = {
  version: 8,
  name: "request_log",
  sql: `
ALTER TABLE request_outcomes ADD COLUMN key_id TEXT;
CREATE INDEX request_outcomes_account ON request_outcomes(account_id, request_id);
CREATE INDEX request_outcomes_key ON request_outcomes(key_id, request_id);
CREATE INDEX ledger_charges_time ON ledger_entries(created_at, account_id, model, amount) WHERE kind = 'charge';
`,
};
