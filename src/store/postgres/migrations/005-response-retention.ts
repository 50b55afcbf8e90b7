import type { PgMigration } from "./index";

/**
 * Retention and per-account quota of stored responses (docs/protocols.md, "Anthropic Messages and OpenAI
 * Responses"), the counterpart of SQLite's migration 006. Each turn records its size in bytes
 * (octet length of its input items' and response's JSON text, as the SQLite store counts them);
 * a trigger fills it, so switchyard_post writes turns unchanged.
 *
 * switchyard_evict_responses(account, quota, keep): deletes the account's oldest turns (never
 * `keep`, the turn just written) until its total is at most `quota`; returns how many it deleted.
 * Two instances evicting the same account at once lock the account's row first, one after the other.
 */
export const responseRetention: PgMigration = {
  version: 5,
  name: "response-retention",
  sql: `
ALTER TABLE responses ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
UPDATE responses SET size = octet_length(input_items) + octet_length(response);
DROP INDEX responses_account;
CREATE INDEX responses_account ON responses(account_id, created_at) INCLUDE (size);
CREATE INDEX responses_created ON responses(created_at);

CREATE FUNCTION switchyard_response_size() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.size := octet_length(NEW.input_items) + octet_length(NEW.response);
  RETURN NEW;
END $$;
CREATE TRIGGER responses_size BEFORE INSERT ON responses
  FOR EACH ROW EXECUTE FUNCTION switchyard_response_size();

CREATE FUNCTION switchyard_evict_responses(p_account_id TEXT, p_quota BIGINT, p_keep TEXT)
RETURNS INTEGER LANGUAGE plpgsql AS $$
DECLARE
  v_total BIGINT;
  r RECORD;
  n INTEGER := 0;
BEGIN
  PERFORM 1 FROM accounts WHERE id = p_account_id FOR UPDATE;
  SELECT COALESCE(SUM(size), 0) INTO v_total FROM responses WHERE account_id = p_account_id;
  IF v_total <= p_quota THEN
    RETURN 0;
  END IF;
  FOR r IN SELECT id, size FROM responses
            WHERE account_id = p_account_id AND id <> p_keep ORDER BY created_at, id LOOP
    EXIT WHEN v_total <= p_quota;
    DELETE FROM responses WHERE id = r.id;
    v_total := v_total - r.size;
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
`,
};
