import type { PgMigration } from "./index";

/**
 * Leases: PostgreSQL off the request path (docs/scale-out.md, "Leases"). An instance moves part
 * of an account's available balance to itself in one statement (a credit lease), and part of a
 * limited key's allowance (a key lease); its requests then hold and release in memory. Charges
 * reach the database in batches, each lowering the balance and the lease it was taken from. This
 * migration holds the schema and the credit and key leases; leases of concurrency (slots) and of
 * request rate, and a dead instance's leases coming back with its holds and slots
 * (switchyard_release_instance), are migration 012 (012-limit-leases.ts).
 *
 * Invariants the schema keeps: balance ≥ reserved + leased (what direct holds and leases spoken
 * for is always covered); leases ≥ 0; a lease row per instance, kind and subject, whose sum is the
 * subject's `leased` (credit, key) or part of its `in_flight` (slots).
 *
 * Keys: a charge counts in its key's period of the hold's time; a period older than the stored
 * one counts against the stored one (it never moves backwards), a newer one starts it
 * (billing/key-periods.ts). Charges carry key_id and counted_at, as on SQLite (migration 010 there).
 *
 * switchyard_post (direct holds) is replaced once more: migration 010's, counting the key's spend.
 *
 * Lock order, as in 003 and 004: instances → limit_state → accounts → api_keys → holds → leases.
 */
export const leases: PgMigration = {
  version: 11,
  name: "leases",
  sql: `
ALTER TABLE accounts ADD COLUMN leased BIGINT NOT NULL DEFAULT 0 CHECK (leased >= 0);
ALTER TABLE accounts ADD CONSTRAINT accounts_held_covered CHECK (reserved + leased <= balance);
ALTER TABLE api_keys ADD COLUMN leased BIGINT NOT NULL DEFAULT 0 CHECK (leased >= 0);

ALTER TABLE ledger_entries ADD COLUMN key_id TEXT;
ALTER TABLE ledger_entries ADD COLUMN counted_at BIGINT;
ALTER TABLE ledger_entries DISABLE TRIGGER ledger_entries_immutable;
UPDATE ledger_entries e SET key_id = h.key_id, counted_at = GREATEST(h.created_at, COALESCE(h.period_start, 0))
  FROM holds h WHERE h.request_id = e.request_id AND e.kind = 'charge';
UPDATE ledger_entries SET counted_at = created_at WHERE counted_at IS NULL;
ALTER TABLE ledger_entries ENABLE TRIGGER ledger_entries_immutable;
CREATE INDEX ledger_key_counted ON ledger_entries(key_id, counted_at) WHERE key_id IS NOT NULL;
-- A charge's own statement counts its key's spend now (below).
DROP TRIGGER ledger_key_charge ON ledger_entries;

CREATE TABLE leases (
  instance_id  TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('credit', 'key', 'slots')),
  subject      TEXT NOT NULL,
  amount       BIGINT NOT NULL CHECK (amount >= 0),
  PRIMARY KEY (instance_id, kind, subject)
);
CREATE INDEX leases_subject ON leases(kind, subject);

-- A key's limit or reset changed (admin API, CLI or plain SQL): its leases were sized for the old
-- one, so every instance is asked to give back what it leases of the key and does not use (the
-- recall an instance sends when it cannot fit a hold). Holds taken before the change still charge.
CREATE FUNCTION switchyard_key_limit_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('switchyard_recall', 'key:' || NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER api_keys_limit_recall AFTER UPDATE OF spend_limit, limit_reset ON api_keys
  FOR EACH ROW
  WHEN (OLD.spend_limit IS DISTINCT FROM NEW.spend_limit OR OLD.limit_reset IS DISTINCT FROM NEW.limit_reset)
  EXECUTE FUNCTION switchyard_key_limit_changed();

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
`,
};
