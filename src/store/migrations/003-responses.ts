import type { Migration } from "./index";

/**
 * Stored responses (POST /v1/responses with store:true). Each row keeps this turn's input items
 * and the full response object; `previous_response_id` links turns so a conversation is rebuilt
 * by walking back. Rows are owned by one account: every read filters on account_id.
 */
export const responses: Migration = {
  version: 3,
  name: "responses",
  sql: `
CREATE TABLE responses (
  id                    TEXT PRIMARY KEY,
  account_id            TEXT NOT NULL REFERENCES accounts(id),
  previous_response_id  TEXT,
  input_items           TEXT NOT NULL,
  response              TEXT NOT NULL,
  created_at            INTEGER NOT NULL
);
CREATE INDEX responses_account ON responses(account_id, created_at);
`,
};
