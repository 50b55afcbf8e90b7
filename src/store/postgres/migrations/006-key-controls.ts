import type { PgMigration } from "./index";

/**
 * Per-key controls (docs/operate.md, "Keys: limits, expiry, models"), the counterpart of SQLite's
 * migration 007: the same columns, the same triggers, and switchyard_reserve_key, the hold of a
 * request made with a key. It is switchyard_reserve plus the key's limit, in one statement and
 * one transaction: the account's row is locked first (UPDATE), then the key's, so every hold of
 * a key queues behind the one before it and no two can spend the same remaining limit. Lock
 * order as in 003: accounts → api_keys → holds; posts and voids reach api_keys through the
 * triggers below, after their accounts rows, in the same order.
 */
export const keyControls: PgMigration = {
  version: 6,
  name: "key-controls",
  sql: `
ALTER TABLE api_keys ADD COLUMN spend_limit BIGINT CHECK (spend_limit IS NULL OR spend_limit >= 0);
ALTER TABLE api_keys ADD COLUMN limit_reset TEXT CHECK (limit_reset IS NULL OR limit_reset IN ('daily', 'weekly', 'monthly'));
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN models TEXT;
ALTER TABLE api_keys ADD COLUMN rate_limit_rpm INTEGER;
ALTER TABLE api_keys ADD COLUMN period_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN period_spent BIGINT NOT NULL DEFAULT 0 CHECK (period_spent >= 0);
ALTER TABLE api_keys ADD COLUMN reserved BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0);
ALTER TABLE api_keys ADD COLUMN spent BIGINT NOT NULL DEFAULT 0;
ALTER TABLE holds ADD COLUMN key_id TEXT;
ALTER TABLE holds ADD COLUMN period_start BIGINT;
CREATE INDEX holds_key ON holds(key_id, created_at) WHERE key_id IS NOT NULL;

-- A key's controls changed: every instance drops its cached key owners (changes.ts).
CREATE TRIGGER api_keys_controls_changed AFTER UPDATE OF spend_limit, limit_reset, expires_at, models, rate_limit_rpm ON api_keys
  FOR EACH ROW EXECUTE FUNCTION switchyard_notify_change();

CREATE FUNCTION switchyard_hold_key_closed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE api_keys SET reserved = api_keys.reserved - OLD.amount WHERE api_keys.id = OLD.key_id;
  RETURN NULL;
END $$;
CREATE TRIGGER holds_key_closed AFTER UPDATE OF state ON holds
  FOR EACH ROW WHEN (OLD.state = 'pending' AND NEW.state <> 'pending' AND OLD.key_id IS NOT NULL)
  EXECUTE FUNCTION switchyard_hold_key_closed();

CREATE FUNCTION switchyard_key_charge() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  h RECORD;
BEGIN
  SELECT hh.key_id, hh.period_start INTO h FROM holds hh WHERE hh.request_id = NEW.request_id;
  IF FOUND AND h.key_id IS NOT NULL THEN
    UPDATE api_keys
       SET spent = api_keys.spent - NEW.amount,
           period_spent = api_keys.period_spent + CASE WHEN api_keys.period_start = h.period_start THEN -NEW.amount ELSE 0 END
     WHERE api_keys.id = h.key_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER ledger_key_charge AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.kind = 'charge' AND NEW.request_id IS NOT NULL)
  EXECUTE FUNCTION switchyard_key_charge();

-- A key's own rate: a GCRA bucket per key with a rate_limit_rpm, on the database's clock, exactly
-- as switchyard_admit's rate part (burst of rpm, then one every 60/rpm s).
CREATE TABLE key_rate_state (
  key_id  TEXT PRIMARY KEY,
  tat     DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE FUNCTION switchyard_key_rate(p_key_id TEXT, p_rpm INTEGER)
RETURNS TABLE (admitted BOOLEAN, tat DOUBLE PRECISION, now_ms DOUBLE PRECISION) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_tat DOUBLE PRECISION;
  v_now DOUBLE PRECISION;
  v_next DOUBLE PRECISION;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO key_rate_state (key_id) VALUES (p_key_id) ON CONFLICT (key_id) DO NOTHING;
  SELECT k.tat INTO v_tat FROM key_rate_state k WHERE k.key_id = p_key_id FOR UPDATE;
  v_now := switchyard_now_ms();
  v_next := GREATEST(v_tat, v_now) + 60000::DOUBLE PRECISION / p_rpm;
  IF v_next - v_now > 60000 + 1e-6 THEN
    RETURN QUERY SELECT false, v_tat, v_now; RETURN;
  END IF;
  UPDATE key_rate_state SET tat = v_next WHERE key_rate_state.key_id = p_key_id;
  RETURN QUERY SELECT true, v_next, v_now;
END $$;

-- One hold of a request made with a key: the account's available balance AND the key's
-- remaining limit in the current period must cover it. p_day/p_week/p_month: the starts (Unix
-- seconds, UTC) of the current periods; the key's limit_reset picks one (0: never resets).
-- refused: NULL (granted), 'credits' (available = the account's) or 'key_limit' (available = what
-- the key has left, key_limit = its limit).
CREATE FUNCTION switchyard_reserve_key(
  p_request_id TEXT, p_account_id TEXT, p_amount BIGINT, p_endpoint TEXT, p_model TEXT,
  p_instance_id TEXT, p_created_at BIGINT, p_key_id TEXT, p_day BIGINT, p_week BIGINT, p_month BIGINT
) RETURNS TABLE (ok BOOLEAN, refused TEXT, available BIGINT, key_limit BIGINT) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_available BIGINT;
  k RECORD;
  v_period BIGINT;
  v_spent BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM switchyard_instance_alive(p_instance_id);
  UPDATE accounts a SET reserved = a.reserved + p_amount
   WHERE a.id = p_account_id AND a.balance - a.reserved >= p_amount;
  IF NOT FOUND THEN
    SELECT a.balance - a.reserved INTO v_available FROM accounts a WHERE a.id = p_account_id;
    RETURN QUERY SELECT false, 'credits'::TEXT, GREATEST(COALESCE(v_available, 0), 0), NULL::BIGINT;
    RETURN;
  END IF;
  SELECT kk.spend_limit, kk.limit_reset, kk.period_start, kk.period_spent, kk.reserved INTO k
    FROM api_keys kk WHERE kk.id = p_key_id AND kk.account_id = p_account_id FOR UPDATE;
  IF NOT FOUND THEN
    -- Nothing was written yet but the account's reserve: undo it by failing the transaction.
    RAISE EXCEPTION 'no key % for account %', p_key_id, p_account_id;
  END IF;
  v_period := CASE k.limit_reset WHEN 'daily' THEN p_day WHEN 'weekly' THEN p_week WHEN 'monthly' THEN p_month ELSE 0 END;
  v_spent := CASE WHEN k.period_start = v_period THEN k.period_spent ELSE 0 END;
  IF k.spend_limit IS NOT NULL AND k.spend_limit - v_spent - k.reserved < p_amount THEN
    UPDATE accounts a SET reserved = a.reserved - p_amount WHERE a.id = p_account_id;
    RETURN QUERY SELECT false, 'key_limit'::TEXT, GREATEST(k.spend_limit - v_spent - k.reserved, 0), k.spend_limit;
    RETURN;
  END IF;
  UPDATE api_keys SET period_start = v_period, period_spent = v_spent, reserved = api_keys.reserved + p_amount
   WHERE api_keys.id = p_key_id;
  INSERT INTO holds (request_id, account_id, amount, endpoint, model, state, instance_id, created_at, key_id, period_start)
  VALUES (p_request_id, p_account_id, p_amount, p_endpoint, p_model, 'pending', p_instance_id, p_created_at, p_key_id, v_period);
  RETURN QUERY SELECT true, NULL::TEXT, NULL::BIGINT, NULL::BIGINT;
END $$;
`,
};
