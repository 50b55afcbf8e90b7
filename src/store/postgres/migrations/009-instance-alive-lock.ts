import type { PgMigration } from "./index";

/**
 * A hold, key hold or slot is written only by an instance that stays alive until it commits.
 * switchyard_instance_alive read the instance's row without a lock, so a reserve that checked it
 * just before a survivor (or the instance's own next run) released that instance could commit its
 * hold after the release had voided the others: a pending hold of a released instance, left to
 * the expiry sweep (seen once in the randomized ledger checker on PostgreSQL, after a crash). The
 * check now takes FOR KEY SHARE on the row: a release (which locks it FOR UPDATE) waits for the
 * writes that passed the check and then voids them too, and a write that comes after it sees the
 * instance released. Heartbeats (an UPDATE of no key column) do not conflict with it.
 */
export const instanceAliveLock: PgMigration = {
  version: 9,
  name: "instance-alive-lock",
  sql: `
CREATE OR REPLACE FUNCTION switchyard_instance_alive(p_instance_id TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM instances WHERE id = p_instance_id AND released_at IS NULL FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'instance % is not registered or was released', p_instance_id USING ERRCODE = 'SY001';
  END IF;
END $$;
`,
};
