import type { Migration } from "./index";

/**
 * How each admitted request ended (HTTP status, completed or cancelled, total and engine time):
 * what a generation record (GET /v1/generation, the dashboard) shows beside the ledger's charge
 * entry, which already holds the model, tokens, characters and cost. Written in batches off the
 * request path (see src/generations/outcomes.ts), so a crash may lose the last second of rows;
 * the money is never here. Keyed by request id, which sorts by arrival time.
 */
export const requestOutcomes: Migration = {
  version: 5,
  name: "request_outcomes",
  sql: `
CREATE TABLE request_outcomes (
  request_id   TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL,
  endpoint     TEXT NOT NULL,
  model        TEXT NOT NULL,
  http_status  INTEGER NOT NULL,
  outcome      TEXT NOT NULL,
  streamed     INTEGER NOT NULL,
  duration_ms  INTEGER NOT NULL,
  engine_ms    INTEGER NOT NULL
) WITHOUT ROWID;
`,
};
