import type { PgMigration } from "./index";

/**
 * Limits and instances as functions (one round trip each). Same lock order as 003:
 * instances → limit_state → accounts → holds.
 *
 * Admission mirrors src/limits/limiter.ts exactly (GCRA with burst = rpm over a 60 s window,
 * concurrency checked first so a request refused for concurrency consumes no rate), on the
 * database's clock, with the account's limit_state row locked: every instance shares one
 * counter and one bucket, with no per-instance slack.
 *
 * Releasing an instance (dead, or restarted) voids its pending holds, gives back its slots and
 * marks it released; it is idempotent, and a pass also sweeps what a released instance may
 * still have taken in the instant it was being released.
 */
export const limitFunctions: PgMigration = {
  version: 4,
  name: "limit-functions",
  sql: `
CREATE FUNCTION switchyard_now_ms() RETURNS DOUBLE PRECISION LANGUAGE sql VOLATILE AS $$
  SELECT extract(epoch FROM clock_timestamp())::DOUBLE PRECISION * 1000
$$;

-- Takes one slot and one unit of rate for the account, or says which limit refused.
-- tat and now_ms let the caller report the rate headers (remaining, reset) as the limiter does.
-- p_release: this instance's slots of the same account released but not yet written; they are
-- given back first, under the same row lock, so a client's next request never finds its previous
-- one's slot still taken (its release is ordered before this admission).
CREATE FUNCTION switchyard_admit(p_slot_id TEXT, p_account_id TEXT, p_rpm INTEGER, p_concurrency INTEGER, p_instance_id TEXT, p_release TEXT[])
RETURNS TABLE (admitted BOOLEAN, reason TEXT, tat DOUBLE PRECISION, now_ms DOUBLE PRECISION) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s RECORD;
  v_now DOUBLE PRECISION;
  v_next DOUBLE PRECISION;
  v_freed INTEGER := 0;
BEGIN
  -- A slot or rate unit lost in a crash of the database only errs towards admitting; a release
  -- lost would keep a slot taken while its instance lives, so one carried here waits for disk.
  PERFORM set_config('synchronous_commit', CASE WHEN cardinality(p_release) > 0 THEN 'on' ELSE 'off' END, true);
  PERFORM switchyard_instance_alive(p_instance_id);
  SELECT l.tat, l.in_flight INTO s FROM limit_state l WHERE l.account_id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no account %', p_account_id USING ERRCODE = 'SY002';
  END IF;
  IF cardinality(p_release) > 0 THEN
    WITH gone AS (DELETE FROM slots sl WHERE sl.id = ANY(p_release) AND sl.account_id = p_account_id RETURNING 1)
    SELECT count(*)::INTEGER INTO v_freed FROM gone;
    IF v_freed > 0 THEN
      UPDATE limit_state SET in_flight = limit_state.in_flight - v_freed WHERE limit_state.account_id = p_account_id;
    END IF;
  END IF;
  v_now := switchyard_now_ms();
  IF s.in_flight - v_freed >= p_concurrency THEN
    RETURN QUERY SELECT false, 'concurrency'::TEXT, s.tat, v_now; RETURN;
  END IF;
  v_next := GREATEST(s.tat, v_now) + 60000::DOUBLE PRECISION / p_rpm;
  IF v_next - v_now > 60000 + 1e-6 THEN
    RETURN QUERY SELECT false, 'rate'::TEXT, s.tat, v_now; RETURN;
  END IF;
  UPDATE limit_state SET tat = v_next, in_flight = limit_state.in_flight + 1 WHERE limit_state.account_id = p_account_id;
  INSERT INTO slots (id, account_id, instance_id) VALUES (p_slot_id, p_account_id, p_instance_id);
  RETURN QUERY SELECT true, NULL::TEXT, v_next, v_now;
END $$;

-- Gives back slots; returns how many existed.
CREATE FUNCTION switchyard_release_slots(p_slot_ids TEXT[]) RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
  v_count INTEGER;
BEGIN
  -- A release lost in a crash would keep a slot taken while its instance lives: wait for disk.
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM 1 FROM limit_state l
   WHERE l.account_id IN (SELECT s.account_id FROM slots s WHERE s.id = ANY(p_slot_ids))
   ORDER BY l.account_id FOR UPDATE;
  WITH gone AS (
    DELETE FROM slots s WHERE s.id = ANY(p_slot_ids) RETURNING s.account_id
  ), per_account AS (
    SELECT g.account_id, count(*)::INTEGER AS n FROM gone g GROUP BY g.account_id
  ), dec AS (
    UPDATE limit_state l SET in_flight = l.in_flight - p.n FROM per_account p WHERE l.account_id = p.account_id RETURNING p.n
  )
  SELECT COALESCE(SUM(n), 0)::INTEGER INTO v_count FROM dec;
  RETURN v_count;
END $$;

-- Voids every pending hold and gives back every slot of an instance, and marks it released.
-- The caller holds the instance's row lock (or is the instance itself, restarting).
CREATE FUNCTION switchyard_release_instance(p_instance_id TEXT, p_now BIGINT)
RETURNS TABLE (holds_voided INTEGER, slots_released INTEGER) LANGUAGE plpgsql AS $$
DECLARE
  v_slots INTEGER;
  v_holds INTEGER;
BEGIN
  PERFORM set_config('synchronous_commit', 'on', true);
  UPDATE instances SET released_at = COALESCE(released_at, clock_timestamp()) WHERE id = p_instance_id;
  PERFORM 1 FROM limit_state l
   WHERE l.account_id IN (SELECT s.account_id FROM slots s WHERE s.instance_id = p_instance_id)
   ORDER BY l.account_id FOR UPDATE;
  WITH gone AS (
    DELETE FROM slots s WHERE s.instance_id = p_instance_id RETURNING s.account_id
  ), per_account AS (
    SELECT g.account_id, count(*)::INTEGER AS n FROM gone g GROUP BY g.account_id
  ), dec AS (
    UPDATE limit_state l SET in_flight = l.in_flight - p.n FROM per_account p WHERE l.account_id = p.account_id RETURNING p.n
  )
  SELECT COALESCE(SUM(n), 0)::INTEGER INTO v_slots FROM dec;
  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT h.account_id FROM holds h WHERE h.instance_id = p_instance_id AND h.state = 'pending')
   ORDER BY a.id FOR UPDATE;
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
  RETURN QUERY SELECT v_holds, v_slots;
END $$;

-- A survivor's pass: releases every instance (other than p_me) whose heartbeat is older than its
-- own timeout (and the database has been up at least that long), and sweeps released instances that still own something. FOR UPDATE SKIP LOCKED:
-- two survivors never release the same instance, and the row lock waits out (or is waited out
-- by) a heartbeat in progress, which is re-checked on the newest row: a live instance is never
-- released. Released instances gone for a day with nothing left are deleted.
CREATE FUNCTION switchyard_reap(p_me TEXT, p_now BIGINT)
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
             -- A database that was itself down lately stopped every heartbeat: give live
             -- instances one full timeout after it came back before judging anyone.
             AND pg_postmaster_start_time() < clock_timestamp() - i.timeout_ms * INTERVAL '1 millisecond')
         OR (i.released_at IS NOT NULL AND (EXISTS (SELECT 1 FROM holds h WHERE h.instance_id = i.id AND h.state = 'pending')
                                         OR EXISTS (SELECT 1 FROM slots s WHERE s.instance_id = i.id))))
     ORDER BY i.heartbeat_at
     FOR UPDATE SKIP LOCKED
  LOOP
    SELECT * INTO r FROM switchyard_release_instance(inst.id, p_now);
    -- A row locked by another survivor's pass is re-checked on its newest version, but the
    -- EXISTS subqueries still see the older snapshot: a pass that finds the instance already
    -- released and nothing left to release says nothing, so each release is reported once.
    IF inst.released_at IS NULL OR r.holds_voided > 0 OR r.slots_released > 0 THEN
      RETURN QUERY SELECT inst.id, r.holds_voided, r.slots_released;
    END IF;
  END LOOP;
  DELETE FROM instances i
   WHERE i.released_at < clock_timestamp() - INTERVAL '1 day'
     AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.instance_id = i.id AND h.state = 'pending')
     AND NOT EXISTS (SELECT 1 FROM slots s WHERE s.instance_id = i.id);
END $$;

-- A restarted instance gives back at once what its previous runs (same name) left behind,
-- waiting for a survivor that is releasing one of them right now rather than skipping it.
CREATE FUNCTION switchyard_release_previous(p_me TEXT, p_name TEXT, p_now BIGINT)
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
         OR EXISTS (SELECT 1 FROM slots s WHERE s.instance_id = i.id))
     ORDER BY i.started_at
     FOR UPDATE
  LOOP
    SELECT * INTO r FROM switchyard_release_instance(inst.id, p_now);
    v_holds := v_holds + r.holds_voided;
    v_slots := v_slots + r.slots_released;
  END LOOP;
  RETURN QUERY SELECT v_holds, v_slots;
END $$;

-- Registers this run of an instance; a heartbeat is switchyard_heartbeat (false: it was released).
CREATE FUNCTION switchyard_heartbeat(p_instance_id TEXT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  UPDATE instances SET heartbeat_at = clock_timestamp() WHERE id = p_instance_id AND released_at IS NULL;
  RETURN FOUND;
END $$;
`,
};
