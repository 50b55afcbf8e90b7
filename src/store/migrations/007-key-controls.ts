import type { Migration } from "./index";

/**
 * Per-key controls (docs/operate.md, "Keys: limits, expiry, models"): a key's spend limit, its reset
 * period, expiry, allowed models and own rate limit, and the running figures its limit is
 * enforced on.
 *
 *   period_start   the start (Unix seconds, UTC) of the period period_spent belongs to; 0 for a
 *                  limit that never resets. A hold in a later period starts a new one (spent 0).
 *   period_spent   charges of holds reserved in that period.
 *   reserved       Σ of the key's pending holds (whatever their period).
 *   spent          every charge of the key, all time.
 *
 * A hold records its key and its period. The key's hold is granted in the same write as the
 * account's (store/sqlite/ledger-store.ts); the triggers below keep `reserved` and the spend in
 * the same transaction as whatever closes a hold or writes its charge, so no path that posts or
 * voids a hold can miss them.
 */
export const keyControls: Migration = {
  version: 7,
  name: "key-controls",
  sql: `
ALTER TABLE api_keys ADD COLUMN spend_limit INTEGER CHECK (spend_limit IS NULL OR spend_limit >= 0);
ALTER TABLE api_keys ADD COLUMN limit_reset TEXT CHECK (limit_reset IS NULL OR limit_reset IN ('daily', 'weekly', 'monthly'));
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
ALTER TABLE api_keys ADD COLUMN models TEXT;
ALTER TABLE api_keys ADD COLUMN rate_limit_rpm INTEGER;
ALTER TABLE api_keys ADD COLUMN period_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN period_spent INTEGER NOT NULL DEFAULT 0 CHECK (period_spent >= 0);
ALTER TABLE api_keys ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0);
ALTER TABLE api_keys ADD COLUMN spent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE holds ADD COLUMN key_id TEXT;
ALTER TABLE holds ADD COLUMN period_start INTEGER;
CREATE INDEX holds_key ON holds(key_id, created_at) WHERE key_id IS NOT NULL;

CREATE TRIGGER holds_key_closed AFTER UPDATE OF state ON holds
  WHEN OLD.state = 'pending' AND NEW.state <> 'pending' AND OLD.key_id IS NOT NULL
BEGIN
  UPDATE api_keys SET reserved = reserved - OLD.amount WHERE id = OLD.key_id;
END;

CREATE TRIGGER ledger_key_charge AFTER INSERT ON ledger_entries
  WHEN NEW.kind = 'charge' AND NEW.request_id IS NOT NULL
BEGIN
  UPDATE api_keys
     SET spent = spent - NEW.amount,
         period_spent = period_spent + CASE WHEN api_keys.period_start = h.period_start THEN -NEW.amount ELSE 0 END
    FROM (SELECT key_id, period_start FROM holds WHERE request_id = NEW.request_id) AS h
   WHERE api_keys.id = h.key_id;
END;
`,
};
