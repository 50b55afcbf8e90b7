import type { PgMigration } from "./index";

/**
 * Cached input billed at the cached price (docs/money.md, "Cached input"): a charge records the
 * prompt tokens the upstream wrote to its prompt cache (`cache_write_tokens`; its reads were
 * already `cached_tokens`) and what the cache took off the charge (`cache_saved`, nano-USD,
 * negative when writes cost more than the reads saved). switchyard_post is replaced to write them;
 * it is migration 003's function with those two columns added, nothing else changed.
 */
export const cacheTokens: PgMigration = {
  version: 10,
  name: "cache-tokens",
  sql: `
ALTER TABLE ledger_entries ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE ledger_entries ADD COLUMN cache_saved BIGINT NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION switchyard_post(p_items JSON, p_now BIGINT)
RETURNS TABLE (
  request_id TEXT, outcome TEXT, charged BIGINT, balance_after BIGINT,
  account_id TEXT, endpoint TEXT, model TEXT
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  it RECORD;
  h RECORD;
  e RECORD;
  v_balance BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT hh.account_id FROM holds hh
                   WHERE hh.request_id IN (SELECT x.request_id FROM json_to_recordset(p_items) AS x(request_id TEXT))
                     AND hh.state = 'pending')
   ORDER BY a.id FOR UPDATE;
  FOR it IN
    SELECT * FROM json_to_recordset(p_items) AS x(
      request_id TEXT, amount BIGINT, service_tier TEXT, note TEXT,
      input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, cache_write_tokens BIGINT, cache_saved BIGINT,
      reasoning_tokens BIGINT, characters BIGINT,
      resp_id TEXT, resp_account_id TEXT, resp_previous_id TEXT, resp_input_items JSON, resp_body JSON, resp_created_at BIGINT)
  LOOP
    UPDATE holds SET state = 'posted', closed_at = p_now
     WHERE holds.request_id = it.request_id AND holds.state = 'pending' AND holds.amount >= it.amount
     RETURNING holds.account_id, holds.amount, holds.endpoint, holds.model INTO h;
    IF FOUND THEN
      UPDATE accounts SET balance = accounts.balance - it.amount, reserved = accounts.reserved - h.amount
       WHERE accounts.id = h.account_id RETURNING accounts.balance INTO v_balance;
      INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
                                  input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved,
                                  reasoning_tokens, characters, reason, created_at)
      VALUES (h.account_id, 'charge', -it.amount, v_balance, it.request_id, h.endpoint, h.model, it.service_tier,
              COALESCE(it.input_tokens, 0), COALESCE(it.output_tokens, 0), COALESCE(it.cached_tokens, 0),
              COALESCE(it.cache_write_tokens, 0), COALESCE(it.cache_saved, 0),
              COALESCE(it.reasoning_tokens, 0), COALESCE(it.characters, 0), it.note, p_now);
      IF it.resp_id IS NOT NULL THEN
        INSERT INTO responses (id, account_id, previous_response_id, input_items, response, created_at)
        VALUES (it.resp_id, it.resp_account_id, it.resp_previous_id, it.resp_input_items::TEXT, it.resp_body::TEXT, it.resp_created_at);
        -- Its input items, then its output items, by id; a later item of the same id replaces an
        -- earlier one (as SQLite's INSERT OR REPLACE), so only the last of each id is written.
        INSERT INTO response_items (account_id, item_id, response_id, item)
        SELECT DISTINCT ON (x.item_id) it.resp_account_id, x.item_id, it.resp_id, x.item::TEXT
          FROM (
            SELECT e.value AS item, e.value->>'id' AS item_id, e.ord
              FROM json_array_elements(it.resp_input_items) WITH ORDINALITY AS e(value, ord)
            UNION ALL
            SELECT o.value, o.value->>'id', 1000000000 + o.ord
              FROM json_array_elements(CASE WHEN json_typeof(it.resp_body->'output') = 'array' THEN it.resp_body->'output' ELSE '[]'::json END)
                   WITH ORDINALITY AS o(value, ord)
          ) x
         WHERE json_typeof(x.item->'id') = 'string' AND x.item_id <> ''
         ORDER BY x.item_id, x.ord DESC
        ON CONFLICT (account_id, item_id) DO UPDATE SET response_id = EXCLUDED.response_id, item = EXCLUDED.item;
      END IF;
      request_id := it.request_id; outcome := 'posted'; charged := it.amount; balance_after := v_balance;
      account_id := h.account_id; endpoint := h.endpoint; model := h.model;
      RETURN NEXT;
    ELSE
      SELECT le.amount, le.balance_after, le.account_id, le.endpoint, le.model INTO e
        FROM ledger_entries le WHERE le.request_id = it.request_id AND le.kind = 'charge';
      request_id := it.request_id;
      IF FOUND THEN
        outcome := 'repeat'; charged := -e.amount; balance_after := e.balance_after;
        account_id := e.account_id; endpoint := e.endpoint; model := e.model;
      ELSE
        outcome := CASE WHEN EXISTS (SELECT 1 FROM holds hh WHERE hh.request_id = it.request_id AND hh.state = 'pending')
                        THEN 'over_hold' ELSE 'no_hold' END;
        charged := NULL; balance_after := NULL; account_id := NULL; endpoint := NULL; model := NULL;
      END IF;
      RETURN NEXT;
    END IF;
  END LOOP;
END $$;
`,
};
