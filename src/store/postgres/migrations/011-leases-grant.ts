/**
 * Migration 011's functions for taking leases and giving them back (011-leases.ts, which says what
 * leases are, runs them in this order after its schema changes). Each constant is SQL text of the
 * released migration, concatenated into its `sql`: never edit it (a later migration replaces a
 * function with CREATE OR REPLACE).
 */

/** switchyard_key_period, switchyard_count_key and switchyard_key_spent: a key's period and its spend in it. */
export const KEY_PERIOD_FUNCTIONS = `
-- The start of a key's period for its limit_reset, from the day, week and month starts given.
CREATE FUNCTION switchyard_key_period(p_reset TEXT, p_day BIGINT, p_week BIGINT, p_month BIGINT) RETURNS BIGINT
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_reset WHEN 'daily' THEN p_day WHEN 'weekly' THEN p_week WHEN 'monthly' THEN p_month ELSE 0 END
$$;

-- Counts a charge of p_amount against its key: the period of the hold's time (p_day…) when it is
-- newer than the stored one starts it, otherwise it counts in the stored one. Returns when the
-- charge counts (counted_at), the hold's time moved up to the period it counted in.
CREATE FUNCTION switchyard_count_key(p_key_id TEXT, p_amount BIGINT, p_held_at BIGINT, p_day BIGINT, p_week BIGINT, p_month BIGINT)
RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
  v_start BIGINT;
BEGIN
  UPDATE api_keys k
     SET spent = k.spent + p_amount,
         period_spent = CASE WHEN switchyard_key_period(k.limit_reset, p_day, p_week, p_month) > k.period_start THEN p_amount ELSE k.period_spent + p_amount END,
         period_start = GREATEST(k.period_start, switchyard_key_period(k.limit_reset, p_day, p_week, p_month))
   WHERE k.id = p_key_id
  RETURNING k.period_start INTO v_start;
  RETURN GREATEST(p_held_at, COALESCE(v_start, 0));
END $$;

-- What counts against a key's limit now (current starts p_day…): the stored spend unless the
-- current period is newer than the stored one.
CREATE FUNCTION switchyard_key_spent(p_reset TEXT, p_period_start BIGINT, p_period_spent BIGINT, p_day BIGINT, p_week BIGINT, p_month BIGINT)
RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN switchyard_key_period(p_reset, p_day, p_week, p_month) > p_period_start THEN 0 ELSE p_period_spent END
$$;
`;

/** switchyard_grant: a lease of the account's balance (and the key's allowance), else a direct hold, else a refusal. */
export const GRANT_FUNCTION = `
-- A hold that did not fit this instance's leases. One statement, one of three outcomes:
--   'lease'   the account (and the key) had room for a lease of p_want: moved to this instance
--             (granted, key_granted); the hold is then booked in memory;
--   'direct'  room for the hold but not for a lease (a small balance): a hold row is written, as
--             before leases (posted or voided by switchyard_post / switchyard_void);
--   'none'    not even the hold fits: available (and key_available, key_limit) say what is left.
-- p_want_key 0: the key has no limit (or this instance's key lease has room already).
CREATE FUNCTION switchyard_grant(
  p_instance_id TEXT, p_request_id TEXT, p_account_id TEXT, p_amount BIGINT, p_want BIGINT, p_endpoint TEXT, p_model TEXT, p_created_at BIGINT,
  p_key_id TEXT, p_want_key BIGINT, p_day BIGINT, p_week BIGINT, p_month BIGINT
) RETURNS TABLE (mode TEXT, granted BIGINT, key_granted BIGINT, available BIGINT, key_available BIGINT, key_limit BIGINT, others_leased BIGINT, key_others_leased BIGINT)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  a RECORD;
  k RECORD;
  v_free BIGINT;
  v_key_free BIGINT := NULL;
  v_limited BOOLEAN := false;
  v_want BIGINT;
  v_want_key BIGINT := 0;
  v_limit BIGINT := NULL;
  v_others BIGINT := 0;
  v_key_others BIGINT := 0;
  v_reset TEXT := NULL;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM switchyard_instance_alive(p_instance_id);
  SELECT acc.balance, acc.reserved, acc.leased INTO a FROM accounts acc WHERE acc.id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'none'::TEXT, 0::BIGINT, 0::BIGINT, 0::BIGINT, NULL::BIGINT, NULL::BIGINT, 0::BIGINT, 0::BIGINT; RETURN;
  END IF;
  v_free := a.balance - a.reserved - a.leased;
  -- What the other instances lease: all a recall could bring back.
  v_others := a.leased - COALESCE((SELECT le.amount FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'credit' AND le.subject = p_account_id), 0);
  IF p_key_id IS NOT NULL THEN
    SELECT kk.spend_limit, kk.limit_reset, kk.period_start, kk.period_spent, kk.reserved, kk.leased INTO k
      FROM api_keys kk WHERE kk.id = p_key_id AND kk.account_id = p_account_id FOR UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'no key % for account %', p_key_id, p_account_id;
    END IF;
    v_limit := k.spend_limit;
    v_reset := k.limit_reset;
    IF k.spend_limit IS NOT NULL THEN
      v_limited := true;
      v_key_free := k.spend_limit - switchyard_key_spent(k.limit_reset, k.period_start, k.period_spent, p_day, p_week, p_month) - k.reserved - k.leased;
      v_key_others := k.leased - COALESCE((SELECT le.amount FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'key' AND le.subject = p_key_id), 0);
    END IF;
  END IF;
  IF v_free < p_amount OR (p_request_id IS NULL AND v_free < p_want) THEN
    RETURN QUERY SELECT 'none'::TEXT, 0::BIGINT, 0::BIGINT, GREATEST(v_free, 0), v_key_free, v_limit, v_others, v_key_others; RETURN;
  END IF;
  IF v_limited AND v_key_free < p_amount THEN
    RETURN QUERY SELECT 'none'::TEXT, 0::BIGINT, 0::BIGINT, GREATEST(v_free, 0), GREATEST(v_key_free, 0), v_limit, v_others, v_key_others; RETURN;
  END IF;
  v_want := GREATEST(p_want, 0);
  IF v_limited THEN v_want_key := GREATEST(p_want_key, 0); END IF;
  -- A lease of what was asked for (nothing at all when nothing was: a key found to have no limit).
  IF v_free >= v_want AND (NOT v_limited OR v_key_free >= v_want_key) AND (v_want > 0 OR v_want_key > 0 OR (p_want <= 0 AND NOT v_limited)) THEN
    IF v_want > 0 THEN
      UPDATE accounts SET leased = accounts.leased + v_want WHERE accounts.id = p_account_id;
      INSERT INTO leases (instance_id, kind, subject, amount) VALUES (p_instance_id, 'credit', p_account_id, v_want)
        ON CONFLICT (instance_id, kind, subject) DO UPDATE SET amount = leases.amount + EXCLUDED.amount;
    END IF;
    IF v_want_key > 0 THEN
      UPDATE api_keys SET leased = api_keys.leased + v_want_key WHERE api_keys.id = p_key_id;
      INSERT INTO leases (instance_id, kind, subject, amount) VALUES (p_instance_id, 'key', p_key_id, v_want_key)
        ON CONFLICT (instance_id, kind, subject) DO UPDATE SET amount = leases.amount + EXCLUDED.amount;
    END IF;
    RETURN QUERY SELECT 'lease'::TEXT, v_want, v_want_key, v_free - v_want, CASE WHEN v_limited THEN v_key_free - v_want_key END, v_limit, v_others, v_key_others;
    RETURN;
  END IF;
  -- A top-up alone (no request): nothing more to do.
  IF p_request_id IS NULL THEN
    RETURN QUERY SELECT 'none'::TEXT, 0::BIGINT, 0::BIGINT, GREATEST(v_free, 0), v_key_free, v_limit, v_others, v_key_others; RETURN;
  END IF;
  -- A small balance (or allowance): this request's own hold, written here.
  UPDATE accounts SET reserved = accounts.reserved + p_amount WHERE accounts.id = p_account_id;
  IF p_key_id IS NOT NULL THEN
    UPDATE api_keys SET reserved = api_keys.reserved + p_amount WHERE api_keys.id = p_key_id;
  END IF;
  INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, instance_id, created_at, key_id, period_start)
  VALUES (p_request_id, p_account_id, p_amount, p_endpoint, p_model, 'pending', p_instance_id, p_created_at, p_key_id,
          CASE WHEN p_key_id IS NULL THEN NULL ELSE switchyard_key_period(v_reset, p_day, p_week, p_month) END);
  RETURN QUERY SELECT 'direct'::TEXT, 0::BIGINT, 0::BIGINT, v_free - p_amount, CASE WHEN v_limited THEN v_key_free - p_amount END, v_limit, v_others, v_key_others;
END $$;
`;

/** switchyard_lease_return: parts of an instance's leases given back. */
export const LEASE_RETURN_FUNCTION = `
-- Gives back parts of this instance's leases: items {kind: credit|key|slots, subject, amount}.
-- Never more than the lease holds; a lease given back whole is deleted. Returns what each item gave back.
CREATE FUNCTION switchyard_lease_return(p_instance_id TEXT, p_items JSON)
RETURNS TABLE (kind TEXT, subject TEXT, returned BIGINT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  it RECORD;
  v_have BIGINT;
  v_back BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM 1 FROM limit_state l
   WHERE l.account_id IN (SELECT x.subject FROM json_to_recordset(p_items) AS x(kind TEXT, subject TEXT) WHERE x.kind = 'slots')
   ORDER BY l.account_id FOR UPDATE;
  PERFORM 1 FROM accounts acc
   WHERE acc.id IN (SELECT x.subject FROM json_to_recordset(p_items) AS x(kind TEXT, subject TEXT) WHERE x.kind = 'credit')
   ORDER BY acc.id FOR UPDATE;
  PERFORM 1 FROM api_keys kk
   WHERE kk.id IN (SELECT x.subject FROM json_to_recordset(p_items) AS x(kind TEXT, subject TEXT) WHERE x.kind = 'key')
   ORDER BY kk.id FOR UPDATE;
  FOR it IN SELECT * FROM json_to_recordset(p_items) AS x(kind TEXT, subject TEXT, amount BIGINT) LOOP
    SELECT le.amount INTO v_have FROM leases le
     WHERE le.instance_id = p_instance_id AND le.kind = it.kind AND le.subject = it.subject FOR UPDATE;
    v_back := LEAST(COALESCE(v_have, 0), GREATEST(COALESCE(it.amount, 0), 0));
    IF v_back > 0 THEN
      UPDATE leases le SET amount = le.amount - v_back
       WHERE le.instance_id = p_instance_id AND le.kind = it.kind AND le.subject = it.subject;
      IF it.kind = 'credit' THEN
        UPDATE accounts SET leased = accounts.leased - v_back WHERE accounts.id = it.subject;
      ELSIF it.kind = 'key' THEN
        UPDATE api_keys SET leased = api_keys.leased - v_back WHERE api_keys.id = it.subject;
      ELSE
        UPDATE limit_state SET in_flight = limit_state.in_flight - v_back WHERE limit_state.account_id = it.subject;
      END IF;
    END IF;
    DELETE FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = it.kind AND le.subject = it.subject AND le.amount = 0;
    kind := it.kind; subject := it.subject; returned := v_back;
    RETURN NEXT;
  END LOOP;
END $$;
`;
