import type { Migration } from "./index";

/**
 * Retention and per-account quota of stored responses (docs/protocols.md, "Anthropic Messages and OpenAI
 * Responses"): each turn records its size in bytes (its input items' and response's JSON text),
 * so an account's total is one index-only sum, and the expiry sweep finds old turns by created_at.
 */
export const responseRetention: Migration = {
  version: 6,
  name: "response-retention",
  sql: `
ALTER TABLE responses ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
UPDATE responses SET size = length(CAST(input_items AS BLOB)) + length(CAST(response AS BLOB));
DROP INDEX responses_account;
CREATE INDEX responses_account ON responses(account_id, created_at, size);
CREATE INDEX responses_created ON responses(created_at);
`,
};
