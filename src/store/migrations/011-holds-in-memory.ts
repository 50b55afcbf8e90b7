import type { Migration } from "./index";

/**
 * Holds live in the serving process's memory (billing/hold-book.ts): the server no longer writes
 * a `holds` row per request, so a charge carries what its hold row used to give it:
 *
 *   key_id      the key whose spend the charge counts against (null: none);
 *   counted_at  when it counts for that key's spend periods (Unix seconds): the hold's time, but
 *               never before the key's period it was counted in (a period never moves backwards,
 *               billing/key-periods.ts) — what GET /v1/key and the key lists sum by.
 *
 * The triggers that kept api_keys.reserved and the key's spend from the holds table are dropped:
 * the charge's own write counts the key's spend (store/sqlite/ledger-store.ts). Charges written
 * before this migration get their key and time from their hold rows (the immutability trigger is
 * lifted for that one update). The holds table stays for the history it holds.
 */
export const holdsInMemory: Migration = {
  version: 11,
  name: "holds-in-memory",
  sql: `
ALTER TABLE ledger_entries ADD COLUMN key_id TEXT;
ALTER TABLE ledger_entries ADD COLUMN counted_at INTEGER;
DROP TRIGGER ledger_entries_immutable_update;
UPDATE ledger_entries
   SET key_id = (SELECT h.key_id FROM holds h WHERE h.request_id = ledger_entries.request_id),
       counted_at = (SELECT MAX(h.created_at, COALESCE(h.period_start, 0)) FROM holds h WHERE h.request_id = ledger_entries.request_id)
 WHERE kind = 'charge' AND request_id IS NOT NULL;
UPDATE ledger_entries SET counted_at = created_at WHERE counted_at IS NULL;
CREATE TRIGGER ledger_entries_immutable_update BEFORE UPDATE ON ledger_entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are immutable'); END;
CREATE INDEX ledger_key_counted ON ledger_entries(key_id, counted_at) WHERE key_id IS NOT NULL;
DROP TRIGGER holds_key_closed;
DROP TRIGGER ledger_key_charge;
`,
};
