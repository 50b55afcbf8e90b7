/**
 * Accounts and API keys in the embedded SQLite database. Reads answer synchronously underneath
 * (bun:sqlite); the key lookup stays synchronous so an authenticated request's hot path never
 * waits a turn of the event loop. Writes of the serving connection that meet a full disk or
 * another process's lock answer 503 (failures.ts).
 */
import type { Store } from "../database";
import type { AccountPatch, AccountRecords, AccountRow } from "../../accounts/accounts";
import type { ApiKeyListing, ApiKeyRow, KeyOwnerRow, KeyPatch, KeyRecords } from "../../accounts/api-keys";
import { periodStart, type PeriodStarts } from "../../billing/key-periods";

const KEY_COLUMNS = `id, account_id, name, prefix, created_at, revoked_at, spend_limit, limit_reset, expires_at, models, rate_limit_rpm,
  period_start, period_spent, reserved, spent`;

type StoredKey = Omit<ApiKeyListing, "models"> & { models: string | null };

export function keyListing(r: StoredKey): ApiKeyListing {
  return { ...r, models: r.models === null ? null : (JSON.parse(r.models) as string[]) };
}
import { writeOrUnavailable } from "./failures";
import { ForeignCommits } from "./foreign-commits";
import { GrantFigures } from "./grant-figures";

export class SqliteAccountRecords implements AccountRecords {
  private readonly q;

  constructor(private readonly db: Store) {
    this.q = {
      byId: db.query<AccountRow, [string]>("SELECT * FROM accounts WHERE id = ?"),
      all: db.query<AccountRow, []>("SELECT * FROM accounts ORDER BY created_at, id"),
    };
  }

  async get(id: string): Promise<AccountRow | null> {
    return this.q.byId.get(id);
  }

  async list(): Promise<AccountRow[]> {
    return this.q.all.all();
  }

  async update(id: string, patch: AccountPatch): Promise<boolean> {
    const db = this.db;
    return writeOrUnavailable(() =>
      db.transaction(() => {
        if (!this.q.byId.get(id)) return false;
        if (patch.name !== undefined) db.query("UPDATE accounts SET name = ? WHERE id = ?").run(patch.name, id);
        if (patch.disabled !== undefined) db.query("UPDATE accounts SET disabled = ? WHERE id = ?").run(patch.disabled ? 1 : 0, id);
        if (patch.rate_limit_rpm !== undefined) db.query("UPDATE accounts SET rate_limit_rpm = ? WHERE id = ?").run(patch.rate_limit_rpm, id);
        if (patch.concurrency_limit !== undefined) db.query("UPDATE accounts SET concurrency_limit = ? WHERE id = ?").run(patch.concurrency_limit, id);
        return true;
      }).immediate(),
    );
  }
}

export class SqliteKeyRecords implements KeyRecords {
  private readonly q;
  /** Commits of other connections, noticed once per turn of the event loop (foreign-commits.ts). */
  private readonly foreign: ForeignCommits;
  private seenEpoch: number;
  /** The ledger's cached key figures: a key's update forgets them (grant-figures.ts). */
  private readonly figures: GrantFigures;

  constructor(private readonly db: Store) {
    this.foreign = ForeignCommits.of(db);
    this.seenEpoch = this.foreign.epoch();
    this.figures = GrantFigures.of(db);
    this.q = {
      // Correlated subqueries, not a JOIN: bun:sqlite ran the JOIN form ~10x slower (12 µs vs
      // 1.3 µs per lookup). The limits come along so a cache hit needs no account read at all.
      byHash: db.query<KeyOwnerRow, [string]>(
        `SELECT k.id, k.account_id, k.hash, k.revoked_at,
                (SELECT a.disabled FROM accounts a WHERE a.id = k.account_id) AS disabled,
                (SELECT a.rate_limit_rpm FROM accounts a WHERE a.id = k.account_id) AS rate_limit_rpm,
                (SELECT a.concurrency_limit FROM accounts a WHERE a.id = k.account_id) AS concurrency_limit,
                k.spend_limit AS key_spend_limit, k.limit_reset AS key_limit_reset, k.expires_at AS key_expires_at, k.models AS key_models,
                k.rate_limit_rpm AS key_rate_limit_rpm
           FROM api_keys k WHERE k.hash = ?`,
      ),
      forAccount: db.query<StoredKey, [string]>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at`),
      byId: db.query<StoredKey, [string]>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`),
      // The key's charges counted since each start: counted_at is when a charge counts for the
      // key's periods (migration 010), the same attribution its limit uses.
      usage: db.query<{ day: number | null; week: number | null; month: number | null }, [string, number, number, number]>(
        `SELECT SUM(CASE WHEN counted_at >= ?2 THEN -amount ELSE 0 END) AS day,
                SUM(CASE WHEN counted_at >= ?3 THEN -amount ELSE 0 END) AS week,
                SUM(CASE WHEN counted_at >= ?4 THEN -amount ELSE 0 END) AS month
           FROM ledger_entries WHERE key_id = ?1 AND kind = 'charge' AND counted_at >= MIN(?2, ?3, ?4)`,
      ),
    };
  }

  async insert(k: ApiKeyRow): Promise<void> {
    writeOrUnavailable(() =>
      this.db
        .query(
          `INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, spend_limit, limit_reset, expires_at, models, rate_limit_rpm)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(k.id, k.account_id, k.name, k.prefix, k.hash, k.created_at, k.spend_limit, k.limit_reset, k.expires_at,
          k.models === null ? null : JSON.stringify(k.models), k.rate_limit_rpm),
    );
  }

  /** One statement: each column is set only when the patch names it. */
  async update(id: string, p: KeyPatch): Promise<boolean> {
    const set: string[] = [];
    const values: (string | number | null)[] = [];
    const put = (column: string, v: string | number | null) => (set.push(`${column} = ?`), values.push(v));
    if (p.name !== undefined) put("name", p.name);
    if (p.spend_limit !== undefined) put("spend_limit", p.spend_limit);
    if (p.limit_reset !== undefined) {
      // A new reset period keeps what was spent in its current period (billing/key-periods.ts):
      // its spend is recomputed from the key's charges; the same period leaves both as they are.
      const start = periodStart(p.limit_reset, Date.now());
      set.push(
        "period_spent = CASE WHEN limit_reset IS ? THEN period_spent ELSE (SELECT COALESCE(SUM(-e.amount), 0) FROM ledger_entries e WHERE e.key_id = api_keys.id AND e.kind = 'charge' AND e.counted_at >= ?) END",
        "period_start = CASE WHEN limit_reset IS ? THEN period_start ELSE ? END",
      );
      values.push(p.limit_reset, start, p.limit_reset, start);
      put("limit_reset", p.limit_reset);
    }
    if (p.expires_at !== undefined) put("expires_at", p.expires_at);
    if (p.models !== undefined) put("models", p.models === null ? null : JSON.stringify(p.models));
    if (p.rate_limit_rpm !== undefined) put("rate_limit_rpm", p.rate_limit_rpm);
    if (set.length === 0) return this.q.byId.get(id) !== null;
    this.figures.forgetKey(id);
    return writeOrUnavailable(() => this.db.query(`UPDATE api_keys SET ${set.join(", ")} WHERE id = ?`).run(...values, id)).changes > 0;
  }

  async get(id: string): Promise<ApiKeyListing | null> {
    const r = this.q.byId.get(id);
    return r ? keyListing(r) : null;
  }

  async usageSince(keyId: string, since: PeriodStarts): Promise<PeriodStarts> {
    const r = this.q.usage.get(keyId, since.day, since.week, since.month);
    return { day: r?.day ?? 0, week: r?.week ?? 0, month: r?.month ?? 0 };
  }

  async revoke(id: string, at: number): Promise<boolean> {
    return writeOrUnavailable(() => this.db.query("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(at, id)).changes > 0;
  }

  async listForAccount(accountId: string): Promise<ApiKeyListing[]> {
    return this.q.forAccount.all(accountId).map(keyListing);
  }

  ownerByHash(hash: string): KeyOwnerRow | null {
    return this.q.byHash.get(hash);
  }

  /** Any commit by another connection (the CLI, say) moves SQLite's data_version. */
  changedElsewhere(): boolean {
    const epoch = this.foreign.epoch();
    if (epoch === this.seenEpoch) return false;
    this.seenEpoch = epoch;
    return true;
  }
}
