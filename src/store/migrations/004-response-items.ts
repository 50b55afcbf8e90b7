import type { Migration } from "./index";

/**
 * Items of stored responses by id, so an `item_reference` input resolves with one indexed read
 * (the AI SDK sends its earlier output items back as references). Each stored response's input
 * and output items get a row; deleting the response deletes them. Filled for responses stored
 * before this migration too.
 */
export const responseItems: Migration = {
  version: 4,
  name: "response-items",
  sql: `
CREATE TABLE response_items (
  account_id   TEXT NOT NULL,
  item_id      TEXT NOT NULL,
  response_id  TEXT NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
  item         TEXT NOT NULL,
  PRIMARY KEY (account_id, item_id)
);
CREATE INDEX response_items_response ON response_items(response_id);
INSERT OR REPLACE INTO response_items (account_id, item_id, response_id, item)
  SELECT r.account_id, json_extract(j.value, '$.id'), r.id, j.value
  FROM responses r, json_each(r.input_items) j
  WHERE json_extract(j.value, '$.id') IS NOT NULL;
INSERT OR REPLACE INTO response_items (account_id, item_id, response_id, item)
  SELECT r.account_id, json_extract(j.value, '$.id'), r.id, j.value
  FROM responses r, json_each(r.response, '$.output') j
  WHERE json_extract(j.value, '$.id') IS NOT NULL;
`,
};
