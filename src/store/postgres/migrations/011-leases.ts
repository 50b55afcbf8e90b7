import type { PgMigration } from "./index";
import { GRANT_FUNCTION, KEY_PERIOD_FUNCTIONS, LEASE_RETURN_FUNCTION } from "./011-leases-grant";
import { ADJUST_FUNCTION, POST_FUNCTION, POST_LEASED_FUNCTION, STORE_RESPONSE_FUNCTION } from "./011-leases-posting";

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
 *
 * The schema changes are below; the functions are in 011-leases-grant.ts (a key's period,
 * switchyard_grant, switchyard_lease_return) and 011-leases-posting.ts (switchyard_post_leased,
 * switchyard_store_response, switchyard_post, switchyard_adjust). `sql` is the schema changes then
 * those functions, in that order: the same text, byte for byte, as when this migration was one
 * template string.
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
` +
    KEY_PERIOD_FUNCTIONS +
    GRANT_FUNCTION +
    LEASE_RETURN_FUNCTION +
    POST_LEASED_FUNCTION +
    STORE_RESPONSE_FUNCTION +
    POST_FUNCTION +
    ADJUST_FUNCTION,
};
