import type { PgMigration } from "./index";

/**
 * The ledger's writes as functions, so each is one round trip and one transaction whatever it
 * touches (see src/store/postgres/ledger-store.ts for how they are called and batched).
 *
 * Lock order, the same in every function here and in 004: instances → limit_state rows (by
 * account id) → accounts rows (by id) → holds. A function that touches several accounts locks
 * them all first, in id order, so two batches (or a batch and a survivor releasing a dead
 * instance's holds) can never deadlock.
 *
 * Durability: posts, voids and adjustments commit with synchronous_commit on (resolved = on
 * disk). Holds commit asynchronously: a hold lost in a crash of the database is like a hold lost
 * in a crash of the SQLite process: its post finds no hold and the request fails uncharged, and
 * any later synchronous commit (the post) flushes the hold with it.
 *
 * SQLSTATE SY001: the calling instance is unknown or was declared dead and released.
 */
export const ledgerFunctions: PgMigration = {
  version: 3,
  name: "ledger-functions",
  sql: `
CREATE FUNCTION switchyard_instance_alive(p_instance_id TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM instances WHERE id = p_instance_id AND released_at IS NULL) THEN
    RAISE EXCEPTION 'instance % is not registered or was released', p_instance_id USING ERRCODE = 'SY001';
  END IF;
END $$;

-- One hold: raises reserved only while the available balance covers it, and writes the hold row.
CREATE FUNCTION switchyard_reserve(
  p_request_id TEXT, p_account_id TEXT, p_amount BIGINT, p_endpoint TEXT, p_model TEXT,
  p_instance_id TEXT, p_created_at BIGINT
) RETURNS TABLE (ok BOOLEAN, available BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  v_available BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM switchyard_instance_alive(p_instance_id);
  UPDATE accounts a SET reserved = a.reserved + p_amount
   WHERE a.id = p_account_id AND a.balance - a.reserved >= p_amount;
  IF NOT FOUND THEN
    SELECT a.balance - a.reserved INTO v_available FROM accounts a WHERE a.id = p_account_id;
    RETURN QUERY SELECT false, GREATEST(COALESCE(v_available, 0), 0);
    RETURN;
  END IF;
  INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, instance_id, created_at)
  VALUES (p_request_id, p_account_id, p_amount, p_endpoint, p_model, 'pending', p_instance_id, p_created_at);
  RETURN QUERY SELECT true, NULL::BIGINT;
END $$;

-- A batch of posts, in order. Each item: the hold posted with amount ≤ its hold, the balance
-- lowered, reserved released, one charge entry, and the stored response if any; or, when the
-- hold is not pending, the first charge ('repeat'), or why not ('over_hold', 'no_hold').
CREATE FUNCTION switchyard_post(p_items JSON, p_now BIGINT)
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
      input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, reasoning_tokens BIGINT, characters BIGINT,
      resp_id TEXT, resp_account_id TEXT, resp_previous_id TEXT, resp_input_items JSON, resp_body JSON, resp_created_at BIGINT)
  LOOP
    UPDATE holds SET state = 'posted', closed_at = p_now
     WHERE holds.request_id = it.request_id AND holds.state = 'pending' AND holds.amount >= it.amount
     RETURNING holds.account_id, holds.amount, holds.endpoint, holds.model INTO h;
    IF FOUND THEN
      UPDATE accounts SET balance = accounts.balance - it.amount, reserved = accounts.reserved - h.amount
       WHERE accounts.id = h.account_id RETURNING accounts.balance INTO v_balance;
      INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
                                  input_tokens, output_tokens, cached_tokens, reasoning_tokens, characters, reason, created_at)
      VALUES (h.account_id, 'charge', -it.amount, v_balance, it.request_id, h.endpoint, h.model, it.service_tier,
              COALESCE(it.input_tokens, 0), COALESCE(it.output_tokens, 0), COALESCE(it.cached_tokens, 0),
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

-- Voids the pending holds among p_request_ids; returns the ids actually voided.
CREATE FUNCTION switchyard_void(p_request_ids TEXT[], p_now BIGINT)
RETURNS TABLE (request_id TEXT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT hh.account_id FROM holds hh WHERE hh.request_id = ANY(p_request_ids) AND hh.state = 'pending')
   ORDER BY a.id FOR UPDATE;
  RETURN QUERY
    WITH voided AS (
      UPDATE holds SET state = 'voided', closed_at = p_now
       WHERE holds.request_id = ANY(p_request_ids) AND holds.state = 'pending'
       RETURNING holds.request_id, holds.account_id, holds.amount
    ), per_account AS (
      SELECT v.account_id, SUM(v.amount)::BIGINT AS total FROM voided v GROUP BY v.account_id
    ), released AS (
      UPDATE accounts SET reserved = accounts.reserved - p.total FROM per_account p WHERE accounts.id = p.account_id
      RETURNING accounts.id
    )
    -- A data-modifying WITH runs to completion whether or not it is read: 'released' always applies.
    SELECT v.request_id FROM voided v;
END $$;

-- Opens an account with its first credits in one transaction; 'ok', or 'above_max'.
CREATE FUNCTION switchyard_create_account(p_id TEXT, p_name TEXT, p_created_at BIGINT, p_credits BIGINT, p_reason TEXT, p_max_balance BIGINT)
RETURNS TEXT LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  IF p_credits > p_max_balance THEN
    RETURN 'above_max';
  END IF;
  INSERT INTO accounts (id, name, balance, created_at) VALUES (p_id, p_name, p_credits, p_created_at);
  IF p_credits > 0 THEN
    INSERT INTO ledger_entries (account_id, kind, amount, balance_after, reason, created_at)
    VALUES (p_id, 'credit', p_credits, p_credits, p_reason, p_created_at);
  END IF;
  RETURN 'ok';
END $$;

-- Credits (p_amount > 0) or a deduction (< 0) as one entry; outcome 'ok', 'not_found',
-- 'below_reserved' (would dig into what is held) or 'above_max'.
CREATE FUNCTION switchyard_adjust(p_account_id TEXT, p_amount BIGINT, p_reason TEXT, p_now BIGINT, p_max_balance BIGINT)
RETURNS TABLE (outcome TEXT, balance_after BIGINT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  a RECORD;
  v_balance BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  SELECT acc.balance, acc.reserved INTO a FROM accounts acc WHERE acc.id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::TEXT, NULL::BIGINT; RETURN;
  END IF;
  IF p_amount < 0 AND a.balance - a.reserved + p_amount < 0 THEN
    RETURN QUERY SELECT 'below_reserved'::TEXT, NULL::BIGINT; RETURN;
  END IF;
  IF a.balance + p_amount > p_max_balance THEN
    RETURN QUERY SELECT 'above_max'::TEXT, NULL::BIGINT; RETURN;
  END IF;
  UPDATE accounts SET balance = accounts.balance + p_amount WHERE accounts.id = p_account_id RETURNING accounts.balance INTO v_balance;
  INSERT INTO ledger_entries (account_id, kind, amount, balance_after, reason, created_at)
  VALUES (p_account_id, CASE WHEN p_amount > 0 THEN 'credit' ELSE 'debit' END, p_amount, v_balance, p_reason, p_now);
  RETURN QUERY SELECT 'ok'::TEXT, v_balance;
END $$;
`,
};
