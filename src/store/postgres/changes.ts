/**
 * Changes that must reach every instance within a second — a key revoked, an account disabled,
 * its limits changed — arrive by LISTEN/NOTIFY: triggers in the database (migration 002) notify
 * channel `switchyard_changes` on every such change, whoever made it (an instance's admin API,
 * the CLI, plain SQL), and each instance drops what it cached. Delivery takes milliseconds.
 *
 * A notification sent while the listening connection was down is lost, so every (re)subscription
 * is reported as a change of everything; the key cache's own 1 s lifetime (accounts/api-keys.ts)
 * bounds the staleness even then. Credits need no notification: every hold is decided by the
 * database on the current balance.
 */
import type { PgDatabase } from "./database";

export const CHANGES_CHANNEL = "switchyard_changes";

export interface Change {
  /** "api_keys" or "accounts"; "*" after a (re)connection: anything may have changed. */
  table: string;
  id: string;
}

export interface ChangeFeed {
  close(): Promise<void>;
}

export async function listenForChanges(db: PgDatabase, onChange: (c: Change) => void): Promise<ChangeFeed> {
  const subscription = await db.sql.listen(
    CHANGES_CHANNEL,
    (payload) => {
      let change: Change = { table: "*", id: "" };
      try {
        const parsed = JSON.parse(payload) as Partial<Change>;
        if (typeof parsed.table === "string" && typeof parsed.id === "string") change = { table: parsed.table, id: parsed.id };
      } catch {
        // Not ours or malformed: treat as a change of everything.
      }
      onChange(change);
    },
    () => onChange({ table: "*", id: "" }),
  );
  return { close: () => subscription.unlisten() };
}

export const RECALL_CHANNEL = "switchyard_recall";

/**
 * Recalls of leases (docs/scale-out.md, "Leases"): an instance that cannot fit a hold or admit a
 * request asks the others, on channel `switchyard_recall`, to give back what they lease of that
 * account or key and do not use. Payload: "credit:<account>", "key:<key>", "slots:<account>",
 * "rate:<account>" or "key_rate:<key>". A recall lost while the connection was down costs only a
 * refusal; leases unused for a few seconds go back by themselves.
 */
export async function listenForRecalls(db: PgDatabase, onRecall: (subject: string) => void): Promise<ChangeFeed> {
  const subscription = await db.sql.listen(RECALL_CHANNEL, (payload) => onRecall(payload));
  return { close: () => subscription.unlisten() };
}
