import type { PgMigration } from "./index";

/**
 * What several instances sharing one database need beyond the SQLite schema:
 *   - instances: who is alive (heartbeat on the database's clock, so instance clocks never
 *     matter); `timeout_ms` is the instance's own, so nobody judges it by a shorter one;
 *     `released_at` is set once its holds and slots were given back (by a survivor, or by its
 *     own restart), after which it may no longer take any;
 *   - holds.instance_id: which instance's request owns a hold;
 *   - limit_state: per account, the GCRA theoretical arrival time (ms, database clock) and the
 *     requests in flight across every instance; slots: one row per request in flight, owned by
 *     an instance, so a dead instance's slots can be found and given back;
 *   - change notifications: a key revoked or an account's `disabled` or limits changed, by any
 *     instance, the CLI or plain SQL, notifies channel `switchyard_changes` (instances drop their
 *     cached key owners at once).
 */
export const scaleOut: PgMigration = {
  version: 2,
  name: "scale-out",
  sql: `
CREATE TABLE instances (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  host          TEXT NOT NULL,
  pid           INTEGER NOT NULL,
  timeout_ms    INTEGER NOT NULL CHECK (timeout_ms > 0),
  started_at    TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
  heartbeat_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
  released_at   TIMESTAMPTZ
);
CREATE INDEX instances_live ON instances(heartbeat_at) WHERE released_at IS NULL;
CREATE INDEX instances_name ON instances(name);

ALTER TABLE holds ADD COLUMN instance_id TEXT;
CREATE INDEX holds_pending_instance ON holds(instance_id) WHERE state = 'pending';

CREATE TABLE limit_state (
  account_id  TEXT PRIMARY KEY REFERENCES accounts(id),
  tat         DOUBLE PRECISION NOT NULL DEFAULT 0,
  in_flight   INTEGER NOT NULL DEFAULT 0 CHECK (in_flight >= 0)
);
INSERT INTO limit_state (account_id) SELECT id FROM accounts;

CREATE FUNCTION switchyard_account_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO limit_state (account_id) VALUES (NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER accounts_limit_state AFTER INSERT ON accounts
  FOR EACH ROW EXECUTE FUNCTION switchyard_account_created();

CREATE TABLE slots (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL,
  instance_id  TEXT NOT NULL,
  acquired_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX slots_instance ON slots(instance_id);

CREATE FUNCTION switchyard_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('switchyard_changes', json_build_object('table', TG_TABLE_NAME, 'id', OLD.id)::text);
  ELSE
    PERFORM pg_notify('switchyard_changes', json_build_object('table', TG_TABLE_NAME, 'id', NEW.id)::text);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER accounts_changed AFTER UPDATE OF disabled, rate_limit_rpm, concurrency_limit ON accounts
  FOR EACH ROW
  WHEN (OLD.disabled IS DISTINCT FROM NEW.disabled
     OR OLD.rate_limit_rpm IS DISTINCT FROM NEW.rate_limit_rpm
     OR OLD.concurrency_limit IS DISTINCT FROM NEW.concurrency_limit)
  EXECUTE FUNCTION switchyard_notify_change();
CREATE TRIGGER api_keys_changed AFTER UPDATE OF revoked_at OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION switchyard_notify_change();
`,
};
