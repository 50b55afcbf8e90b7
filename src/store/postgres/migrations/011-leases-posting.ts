/**
 * Migration 011's functions that move money under leases (011-leases.ts says what leases are and
 * runs these in this order after 011-leases-grant.ts's): charges shipped from leases, the stored
 * response a charge writes, direct holds posted and balances adjusted. Each constant is SQL text
 * of the released migration, concatenated into its `sql`: never edit it (a later migration
 * replaces a function with CREATE OR REPLACE, as 013 does switchyard_post_leased).
 */

/** switchyard_post_leased: a batch of charges taken from this instance's leases. */
export const POST_LEASED_FUNCTION = `
-- Charges of holds taken from this instance's leases, a batch in one statement (the instance's
-- charge journal ships them: store/postgres/charge-journal.ts). Each item, in order: the charge
-- lowers the balance and the credit lease (and the key's lease), counts its key's spend, writes
-- one entry (and its stored response). A repeat returns the first charge. A lease a survivor
-- already gave back (this instance was declared dead while the charge waited) no longer covers
-- it: the charge then takes the account's free balance, never more — 'reduced' says it was cut.
CREATE FUNCTION switchyard_post_leased(p_instance_id TEXT, p_items JSON, p_now BIGINT)
RETURNS TABLE (request_id TEXT, outcome TEXT, charged BIGINT, balance_after BIGINT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  it RECORD;
  e RECORD;
  a RECORD;
  v_lease BIGINT;
  v_from_lease BIGINT;
  v_charge BIGINT;
  v_key_lease BIGINT;
  v_balance BIGINT;
  v_counted BIGINT;
  v_note TEXT;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM 1 FROM accounts acc WHERE acc.id IN (SELECT x.account_id FROM json_to_recordset(p_items) AS x(account_id TEXT))
   ORDER BY acc.id FOR UPDATE;
  PERFORM 1 FROM api_keys kk WHERE kk.id IN (SELECT x.key_id FROM json_to_recordset(p_items) AS x(key_id TEXT) WHERE x.key_id IS NOT NULL)
   ORDER BY kk.id FOR UPDATE;
  FOR it IN
    SELECT * FROM json_to_recordset(p_items) AS x(
      request_id TEXT, account_id TEXT, key_id TEXT, amount BIGINT, held_at BIGINT, day BIGINT, week BIGINT, month BIGINT,
      endpoint TEXT, model TEXT, service_tier TEXT, note TEXT,
      input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, cache_write_tokens BIGINT, cache_saved BIGINT,
      reasoning_tokens BIGINT, characters BIGINT,
      resp_id TEXT, resp_account_id TEXT, resp_previous_id TEXT, resp_input_items JSON, resp_body JSON, resp_created_at BIGINT)
  LOOP
    SELECT le.amount, le.balance_after INTO e FROM ledger_entries le WHERE le.request_id = it.request_id AND le.kind = 'charge';
    IF FOUND THEN
      request_id := it.request_id; outcome := 'repeat'; charged := -e.amount; balance_after := e.balance_after;
      RETURN NEXT;
      CONTINUE;
    END IF;
    SELECT l.amount INTO v_lease FROM leases l WHERE l.instance_id = p_instance_id AND l.kind = 'credit' AND l.subject = it.account_id FOR UPDATE;
    v_from_lease := LEAST(COALESCE(v_lease, 0), it.amount);
    SELECT acc.balance, acc.reserved, acc.leased INTO a FROM accounts acc WHERE acc.id = it.account_id;
    IF NOT FOUND THEN
      request_id := it.request_id; outcome := 'no_account'; charged := NULL; balance_after := NULL;
      RETURN NEXT;
      CONTINUE;
    END IF;
    v_charge := v_from_lease + LEAST(it.amount - v_from_lease, GREATEST(a.balance - a.reserved - a.leased, 0));
    v_note := it.note;
    IF v_charge < it.amount THEN
      v_note := concat_ws('; ', v_note, 'reduced: its lease had been given back and the account could not cover all of it');
    END IF;
    IF v_from_lease > 0 THEN
      UPDATE leases l SET amount = l.amount - v_from_lease WHERE l.instance_id = p_instance_id AND l.kind = 'credit' AND l.subject = it.account_id;
    END IF;
    UPDATE accounts SET balance = accounts.balance - v_charge, leased = accounts.leased - v_from_lease
     WHERE accounts.id = it.account_id RETURNING accounts.balance INTO v_balance;
    v_counted := it.held_at;
    IF it.key_id IS NOT NULL THEN
      SELECT l.amount INTO v_key_lease FROM leases l WHERE l.instance_id = p_instance_id AND l.kind = 'key' AND l.subject = it.key_id FOR UPDATE;
      v_key_lease := LEAST(COALESCE(v_key_lease, 0), v_charge);
      IF v_key_lease > 0 THEN
        UPDATE leases l SET amount = l.amount - v_key_lease WHERE l.instance_id = p_instance_id AND l.kind = 'key' AND l.subject = it.key_id;
        UPDATE api_keys SET leased = api_keys.leased - v_key_lease WHERE api_keys.id = it.key_id;
      END IF;
      v_counted := switchyard_count_key(it.key_id, v_charge, it.held_at, it.day, it.week, it.month);
    END IF;
    INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
                                input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved,
                                reasoning_tokens, characters, reason, created_at, key_id, counted_at)
    VALUES (it.account_id, 'charge', -v_charge, v_balance, it.request_id, it.endpoint, it.model, it.service_tier,
            COALESCE(it.input_tokens, 0), COALESCE(it.output_tokens, 0), COALESCE(it.cached_tokens, 0),
            COALESCE(it.cache_write_tokens, 0), COALESCE(it.cache_saved, 0),
            COALESCE(it.reasoning_tokens, 0), COALESCE(it.characters, 0), v_note, p_now, it.key_id, v_counted);
    IF it.resp_id IS NOT NULL THEN
      PERFORM switchyard_store_response(it.resp_id, it.resp_account_id, it.resp_previous_id, it.resp_input_items, it.resp_body, it.resp_created_at);
    END IF;
    request_id := it.request_id; outcome := CASE WHEN v_charge < it.amount THEN 'reduced' ELSE 'posted' END; charged := v_charge; balance_after := v_balance;
    RETURN NEXT;
  END LOOP;
END $$;
`;

/** switchyard_store_response: a stored Responses turn and its items. */
export const STORE_RESPONSE_FUNCTION = `
-- A stored Responses turn and its items, as 003's switchyard_post writes them.
CREATE FUNCTION switchyard_store_response(p_id TEXT, p_account_id TEXT, p_previous_id TEXT, p_input_items JSON, p_body JSON, p_created_at BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO responses (id, account_id, previous_response_id, input_items, response, created_at)
  VALUES (p_id, p_account_id, p_previous_id, p_input_items::TEXT, p_body::TEXT, p_created_at);
  INSERT INTO response_items (account_id, item_id, response_id, item)
  SELECT DISTINCT ON (x.item_id) p_account_id, x.item_id, p_id, x.item::TEXT
    FROM (
      SELECT e.value AS item, e.value->>'id' AS item_id, e.ord
        FROM json_array_elements(p_input_items) WITH ORDINALITY AS e(value, ord)
      UNION ALL
      SELECT o.value, o.value->>'id', 1000000000 + o.ord
        FROM json_array_elements(CASE WHEN json_typeof(p_body->'output') = 'array' THEN p_body->'output' ELSE '[]'::json END)
             WITH ORDINALITY AS o(value, ord)
    ) x
   WHERE json_typeof(x.item->'id') = 'string' AND x.item_id <> ''
   ORDER BY x.item_id, x.ord DESC
  ON CONFLICT (account_id, item_id) DO UPDATE SET response_id = EXCLUDED.response_id, item = EXCLUDED.item;
END $$;
`;

/** switchyard_post, replaced: direct holds posted, counting their key's spend. */
export const POST_FUNCTION = `
-- Direct holds (switchyard_grant's 'direct') are posted as before, and now count their key's
-- spend in the period of the hold's time, never moving it backwards.
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
  v_counted BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT hh.account_id FROM holds hh
                   WHERE hh.request_id IN (SELECT x.request_id FROM json_to_recordset(p_items) AS x(request_id TEXT))
                     AND hh.state = 'pending')
   ORDER BY a.id FOR UPDATE;
  PERFORM 1 FROM api_keys k
   WHERE k.id IN (SELECT hh.key_id FROM holds hh
                   WHERE hh.request_id IN (SELECT x.request_id FROM json_to_recordset(p_items) AS x(request_id TEXT))
                     AND hh.state = 'pending' AND hh.key_id IS NOT NULL)
   ORDER BY k.id FOR UPDATE;
  FOR it IN
    SELECT * FROM json_to_recordset(p_items) AS x(
      request_id TEXT, amount BIGINT, service_tier TEXT, note TEXT,
      input_tokens BIGINT, output_tokens BIGINT, cached_tokens BIGINT, cache_write_tokens BIGINT, cache_saved BIGINT,
      reasoning_tokens BIGINT, characters BIGINT,
      resp_id TEXT, resp_account_id TEXT, resp_previous_id TEXT, resp_input_items JSON, resp_body JSON, resp_created_at BIGINT)
  LOOP
    UPDATE holds SET state = 'posted', closed_at = p_now
     WHERE holds.request_id = it.request_id AND holds.state = 'pending' AND holds.amount >= it.amount
     RETURNING holds.account_id, holds.amount, holds.endpoint, holds.model, holds.key_id, holds.period_start, holds.created_at INTO h;
    IF FOUND THEN
      UPDATE accounts SET balance = accounts.balance - it.amount, reserved = accounts.reserved - h.amount
       WHERE accounts.id = h.account_id RETURNING accounts.balance INTO v_balance;
      v_counted := h.created_at;
      IF h.key_id IS NOT NULL THEN
        UPDATE api_keys k
           SET spent = k.spent + it.amount,
               period_spent = CASE WHEN COALESCE(h.period_start, 0) > k.period_start THEN it.amount ELSE k.period_spent + it.amount END,
               period_start = GREATEST(k.period_start, COALESCE(h.period_start, 0))
         WHERE k.id = h.key_id
        RETURNING GREATEST(h.created_at, k.period_start) INTO v_counted;
      END IF;
      INSERT INTO ledger_entries (account_id, kind, amount, balance_after, request_id, endpoint, model, service_tier,
                                  input_tokens, output_tokens, cached_tokens, cache_write_tokens, cache_saved,
                                  reasoning_tokens, characters, reason, created_at, key_id, counted_at)
      VALUES (h.account_id, 'charge', -it.amount, v_balance, it.request_id, h.endpoint, h.model, it.service_tier,
              COALESCE(it.input_tokens, 0), COALESCE(it.output_tokens, 0), COALESCE(it.cached_tokens, 0),
              COALESCE(it.cache_write_tokens, 0), COALESCE(it.cache_saved, 0),
              COALESCE(it.reasoning_tokens, 0), COALESCE(it.characters, 0), it.note, p_now, h.key_id, v_counted);
      IF it.resp_id IS NOT NULL THEN
        PERFORM switchyard_store_response(it.resp_id, it.resp_account_id, it.resp_previous_id, it.resp_input_items, it.resp_body, it.resp_created_at);
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
`;

/** switchyard_adjust, replaced: a deduction leaves what is leased alone. */
export const ADJUST_FUNCTION = `
-- A deduction may dig neither into direct holds nor into what is leased.
CREATE OR REPLACE FUNCTION switchyard_adjust(p_account_id TEXT, p_amount BIGINT, p_reason TEXT, p_now BIGINT, p_max_balance BIGINT)
RETURNS TABLE (outcome TEXT, balance_after BIGINT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  a RECORD;
  v_balance BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  SELECT acc.balance, acc.reserved, acc.leased INTO a FROM accounts acc WHERE acc.id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::TEXT, NULL::BIGINT; RETURN;
  END IF;
  IF p_amount < 0 AND a.balance - a.reserved - a.leased + p_amount < 0 THEN
    RETURN QUERY SELECT 'below_reserved'::TEXT, NULL::BIGINT; RETURN;
  END IF;
  IF a.balance + p_amount > p_max_balance THEN
    RETURN QUERY SELECT 'above_max'::TEXT, NULL::BIGINT; RETURN;
  END IF;
  UPDATE accounts SET balance = accounts.balance + p_amount WHERE accounts.id = p_account_id RETURNING accounts.balance INTO v_balance;
  INSERT INTO ledger_entries (account_id, kind, amount, balance_after, reason, created_at, counted_at)
  VALUES (p_account_id, CASE WHEN p_amount > 0 THEN 'credit' ELSE 'debit' END, p_amount, v_balance, p_reason, p_now, p_now);
  RETURN QUERY SELECT 'ok'::TEXT, v_balance;
END $$;
`;
