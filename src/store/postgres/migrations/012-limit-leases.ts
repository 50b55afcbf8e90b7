import type { PgMigration } from "./index";

/**
 * Leases of limits, and every lease coming back with its instance (docs/scale-out.md, "Leases";
 * the leases table and the credit and key leases are migration 011). An instance leases part of an
 * account's concurrency (slots: a lease of in-flight requests) and of its request rate (requests
 * taken from the account's or the key's GCRA bucket), and admits in memory while they last
 * (store/postgres/limiter.ts); what it does not use it gives back.
 *
 * Releasing an instance (a survivor's reap, a restart's release of its previous run) gives back
 * its leases of every kind with its holds and slots: switchyard_release_instance, switchyard_reap
 * and switchyard_release_previous are replaced to do so.
 *
 * Lock order, as in 003 and 004: instances → limit_state → accounts → api_keys → holds → leases.
 */
export const limitLeases: PgMigration = {
  version: 12,
  name: "limit-leases",
  sql: `
-- Rate and concurrency for an instance, in one statement when its own leases run out: up to
-- p_want_slots slots of the account's concurrency (a lease of in-flight requests), and up to
-- p_want_tokens (p_want_key_tokens) requests of the account's (the key's) GCRA bucket — burst of
-- rpm, then one every 60/rpm s, on the database's clock. The key's rate first (a key refusal
-- takes nothing of the account's), then concurrency (a concurrency refusal consumes no rate),
-- then the account's rate: all or nothing of what was asked for. tat, key_tat and now_ms let the
-- caller report the rate headers and when to retry.
CREATE FUNCTION switchyard_limits_take(
  p_instance_id TEXT, p_account_id TEXT, p_rpm INTEGER, p_concurrency INTEGER, p_want_slots INTEGER, p_want_tokens INTEGER,
  p_key_id TEXT, p_key_rpm INTEGER, p_want_key_tokens INTEGER
) RETURNS TABLE (refused TEXT, slots INTEGER, tokens INTEGER, key_tokens INTEGER, tat DOUBLE PRECISION, key_tat DOUBLE PRECISION, now_ms DOUBLE PRECISION)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s RECORD;
  v_now DOUBLE PRECISION;
  v_tat DOUBLE PRECISION;
  v_key_tat DOUBLE PRECISION := NULL;
  v_slots INTEGER := 0;
  v_tokens INTEGER := 0;
  v_key_tokens INTEGER := 0;
  v_step DOUBLE PRECISION;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM switchyard_instance_alive(p_instance_id);
  SELECT l.tat, l.in_flight INTO s FROM limit_state l WHERE l.account_id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no account %', p_account_id USING ERRCODE = 'SY002';
  END IF;
  v_now := switchyard_now_ms();
  v_tat := s.tat;
  IF p_key_id IS NOT NULL AND p_want_key_tokens > 0 THEN
    INSERT INTO key_rate_state (key_id) VALUES (p_key_id) ON CONFLICT (key_id) DO NOTHING;
    SELECT k.tat INTO v_key_tat FROM key_rate_state k WHERE k.key_id = p_key_id FOR UPDATE;
    v_step := 60000::DOUBLE PRECISION / p_key_rpm;
    v_key_tokens := LEAST(p_want_key_tokens, GREATEST(floor((60000 + 1e-6 + v_now - GREATEST(v_key_tat, v_now)) / v_step)::INTEGER, 0));
    IF v_key_tokens = 0 THEN
      RETURN QUERY SELECT 'key_rate'::TEXT, 0, 0, 0, v_tat, v_key_tat, v_now; RETURN;
    END IF;
  END IF;
  IF p_want_slots > 0 THEN
    v_slots := LEAST(p_want_slots, GREATEST(p_concurrency - s.in_flight, 0));
    IF v_slots = 0 THEN
      RETURN QUERY SELECT 'concurrency'::TEXT, 0, 0, 0, v_tat, v_key_tat, v_now; RETURN;
    END IF;
  END IF;
  IF p_want_tokens > 0 THEN
    v_step := 60000::DOUBLE PRECISION / p_rpm;
    v_tokens := LEAST(p_want_tokens, GREATEST(floor((60000 + 1e-6 + v_now - GREATEST(v_tat, v_now)) / v_step)::INTEGER, 0));
    IF v_tokens = 0 THEN
      RETURN QUERY SELECT 'rate'::TEXT, 0, 0, 0, v_tat, v_key_tat, v_now; RETURN;
    END IF;
    v_tat := GREATEST(v_tat, v_now) + v_tokens * v_step;
  END IF;
  IF v_key_tokens > 0 THEN
    v_key_tat := GREATEST(v_key_tat, v_now) + v_key_tokens * 60000::DOUBLE PRECISION / p_key_rpm;
    UPDATE key_rate_state SET tat = v_key_tat WHERE key_rate_state.key_id = p_key_id;
  END IF;
  UPDATE limit_state SET tat = v_tat, in_flight = limit_state.in_flight + v_slots WHERE limit_state.account_id = p_account_id;
  IF v_slots > 0 THEN
    INSERT INTO leases (instance_id, kind, subject, amount) VALUES (p_instance_id, 'slots', p_account_id, v_slots)
      ON CONFLICT (instance_id, kind, subject) DO UPDATE SET amount = leases.amount + EXCLUDED.amount;
  END IF;
  RETURN QUERY SELECT NULL::TEXT, v_slots, v_tokens, v_key_tokens, v_tat, v_key_tat, v_now;
END $$;

-- A key's own rate for an instance: up to p_want requests of its GCRA bucket (burst of rpm, then
-- one every 60/rpm s), on the database's clock.
CREATE FUNCTION switchyard_key_rate_take(p_key_id TEXT, p_rpm INTEGER, p_want INTEGER)
RETURNS TABLE (tokens INTEGER, tat DOUBLE PRECISION, now_ms DOUBLE PRECISION) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_tat DOUBLE PRECISION;
  v_now DOUBLE PRECISION;
  v_step DOUBLE PRECISION;
  v_tokens INTEGER;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO key_rate_state (key_id) VALUES (p_key_id) ON CONFLICT (key_id) DO NOTHING;
  SELECT k.tat INTO v_tat FROM key_rate_state k WHERE k.key_id = p_key_id FOR UPDATE;
  v_now := switchyard_now_ms();
  v_step := 60000::DOUBLE PRECISION / p_rpm;
  v_tokens := LEAST(p_want, GREATEST(floor((60000 + 1e-6 + v_now - GREATEST(v_tat, v_now)) / v_step)::INTEGER, 0));
  IF v_tokens > 0 THEN
    v_tat := GREATEST(v_tat, v_now) + v_tokens * v_step;
    UPDATE key_rate_state SET tat = v_tat WHERE key_rate_state.key_id = p_key_id;
  END IF;
  RETURN QUERY SELECT v_tokens, v_tat, v_now;
END $$;

-- Unused rate an instance gives back (items {key: bool, subject, tokens, rpm}): its bucket's
-- arrival time moves back by those requests' spacing.
CREATE FUNCTION switchyard_rate_return(p_items JSON) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  it RECORD;
BEGIN
  FOR it IN SELECT * FROM json_to_recordset(p_items) AS x(key BOOLEAN, subject TEXT, tokens INTEGER, rpm INTEGER) ORDER BY x.key, x.subject LOOP
    IF it.tokens <= 0 OR it.rpm <= 0 THEN CONTINUE; END IF;
    IF it.key THEN
      UPDATE key_rate_state SET tat = key_rate_state.tat - it.tokens * 60000::DOUBLE PRECISION / it.rpm WHERE key_rate_state.key_id = it.subject;
    ELSE
      UPDATE limit_state SET tat = limit_state.tat - it.tokens * 60000::DOUBLE PRECISION / it.rpm WHERE limit_state.account_id = it.subject;
    END IF;
  END LOOP;
END $$;

-- Releasing an instance gives back its leases too: credit and key leases to their accounts and
-- keys, slots to the account's concurrency. (Rate it took stays taken: it may have been used.)
CREATE OR REPLACE FUNCTION switchyard_release_instance(p_instance_id TEXT, p_now BIGINT)
RETURNS TABLE (holds_voided INTEGER, slots_released INTEGER) LANGUAGE plpgsql AS $$
DECLARE
  v_slots INTEGER;
  v_slot_leases INTEGER;
  v_holds INTEGER;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  UPDATE instances SET released_at = COALESCE(released_at, clock_timestamp()) WHERE id = p_instance_id;
  PERFORM 1 FROM limit_state l
   WHERE l.account_id IN (SELECT s.account_id FROM slots s WHERE s.instance_id = p_instance_id
                          UNION SELECT le.subject FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'slots')
   ORDER BY l.account_id FOR UPDATE;
  WITH gone AS (
    DELETE FROM slots s WHERE s.instance_id = p_instance_id RETURNING s.account_id
  ), per_account AS (
    SELECT g.account_id, count(*)::INTEGER AS n FROM gone g GROUP BY g.account_id
  ), dec AS (
    UPDATE limit_state l SET in_flight = l.in_flight - p.n FROM per_account p WHERE l.account_id = p.account_id RETURNING p.n
  )
  SELECT COALESCE(SUM(n), 0)::INTEGER INTO v_slots FROM dec;
  WITH gone AS (
    DELETE FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'slots' RETURNING le.subject, le.amount
  ), dec AS (
    UPDATE limit_state l SET in_flight = l.in_flight - g.amount FROM gone g WHERE l.account_id = g.subject RETURNING g.amount
  )
  SELECT COALESCE(SUM(amount), 0)::INTEGER INTO v_slot_leases FROM dec;
  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT h.account_id FROM holds h WHERE h.instance_id = p_instance_id AND h.state = 'pending'
                  UNION SELECT le.subject FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'credit')
   ORDER BY a.id FOR UPDATE;
  PERFORM 1 FROM api_keys k
   WHERE k.id IN (SELECT le.subject FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'key')
   ORDER BY k.id FOR UPDATE;
  WITH gone AS (
    DELETE FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'credit' RETURNING le.subject, le.amount
  )
  UPDATE accounts a SET leased = a.leased - g.amount FROM gone g WHERE a.id = g.subject;
  WITH gone AS (
    DELETE FROM leases le WHERE le.instance_id = p_instance_id AND le.kind = 'key' RETURNING le.subject, le.amount
  )
  UPDATE api_keys k SET leased = k.leased - g.amount FROM gone g WHERE k.id = g.subject;
  WITH voided AS (
    UPDATE holds h SET state = 'voided', closed_at = p_now
     WHERE h.instance_id = p_instance_id AND h.state = 'pending'
     RETURNING h.account_id, h.amount
  ), per_account AS (
    SELECT v.account_id, SUM(v.amount)::BIGINT AS total, count(*)::INTEGER AS n FROM voided v GROUP BY v.account_id
  ), released AS (
    UPDATE accounts a SET reserved = a.reserved - p.total FROM per_account p WHERE a.id = p.account_id RETURNING p.n
  )
  SELECT COALESCE(SUM(n), 0)::INTEGER INTO v_holds FROM released;
  RETURN QUERY SELECT v_holds, v_slots + v_slot_leases;
END $$;

-- Survivors and restarts also look for leases a released instance still has.
CREATE OR REPLACE FUNCTION switchyard_reap(p_me TEXT, p_now BIGINT)
RETURNS TABLE (instance_id TEXT, holds_voided INTEGER, slots_released INTEGER) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  inst RECORD;
  r RECORD;
BEGIN
  FOR inst IN
    SELECT i.id, i.released_at FROM instances i
     WHERE i.id <> p_me
       AND ((i.released_at IS NULL AND i.heartbeat_at < clock_timestamp() - i.timeout_ms * INTERVAL '1 millisecond'
             AND pg_postmaster_start_time() < clock_timestamp() - i.timeout_ms * INTERVAL '1 millisecond')
         OR (i.released_at IS NOT NULL AND (EXISTS (SELECT 1 FROM holds h WHERE h.instance_id = i.id AND h.state = 'pending')
                                         OR EXISTS (SELECT 1 FROM slots s WHERE s.instance_id = i.id)
                                         OR EXISTS (SELECT 1 FROM leases le WHERE le.instance_id = i.id))))
     ORDER BY i.heartbeat_at
     FOR UPDATE SKIP LOCKED
  LOOP
    SELECT * INTO r FROM switchyard_release_instance(inst.id, p_now);
    IF inst.released_at IS NULL OR r.holds_voided > 0 OR r.slots_released > 0 THEN
      RETURN QUERY SELECT inst.id, r.holds_voided, r.slots_released;
    END IF;
  END LOOP;
  DELETE FROM instances i
   WHERE i.released_at < clock_timestamp() - INTERVAL '1 day'
     AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.instance_id = i.id AND h.state = 'pending')
     AND NOT EXISTS (SELECT 1 FROM slots s WHERE s.instance_id = i.id)
     AND NOT EXISTS (SELECT 1 FROM leases le WHERE le.instance_id = i.id);
END $$;

CREATE OR REPLACE FUNCTION switchyard_release_previous(p_me TEXT, p_name TEXT, p_now BIGINT)
RETURNS TABLE (holds_voided INTEGER, slots_released INTEGER) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  inst RECORD;
  r RECORD;
  v_holds INTEGER := 0;
  v_slots INTEGER := 0;
BEGIN
  FOR inst IN
    SELECT i.id FROM instances i
     WHERE i.name = p_name AND i.id <> p_me
       AND (i.released_at IS NULL
         OR EXISTS (SELECT 1 FROM holds h WHERE h.instance_id = i.id AND h.state = 'pending')
         OR EXISTS (SELECT 1 FROM slots s WHERE s.instance_id = i.id)
         OR EXISTS (SELECT 1 FROM leases le WHERE le.instance_id = i.id))
     ORDER BY i.started_at
     FOR UPDATE
  LOOP
    SELECT * INTO r FROM switchyard_release_instance(inst.id, p_now);
    v_holds := v_holds + r.holds_voided;
    v_slots := v_slots + r.slots_released;
  END LOOP;
  RETURN QUERY SELECT v_holds, v_slots;
END $$;
`,
};
