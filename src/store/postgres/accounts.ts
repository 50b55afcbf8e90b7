/**
 * Accounts and API keys in PostgreSQL. Every instance reads the same rows; a change to a key or to
 * an account's `disabled` flag or limits notifies every instance (migration 002's triggers), which
 * then drop their cached key owners (changes.ts → ApiKeys.forget()).
 */
import type { PgDatabase } from "./database";
import { int } from "./database";
import type { AccountPatch, AccountRecords, AccountRow } from "../../accounts/accounts";
import type { ApiKeyListing, ApiKeyRow, KeyOwnerRow, KeyPatch, KeyRecords } from "../../accounts/api-keys";
import { periodStart, type LimitReset, type PeriodStarts } from "../../billing/key-periods";

type Row = Record<string, unknown>;

function accountRow(r: Row): AccountRow {
  return {
    id: r.id as string,
    name: r.name as string,
    balance: int(r.balance),
    // Spoken for: direct holds and what instances lease (billing/live-reserved.ts adds this
    // instance's own view of its lease).
    reserved: int(r.reserved) + int(r.leased ?? 0),
    disabled: int(r.disabled),
    rate_limit_rpm: r.rate_limit_rpm === null ? null : int(r.rate_limit_rpm),
    concurrency_limit: r.concurrency_limit === null ? null : int(r.concurrency_limit),
    created_at: int(r.created_at),
  };
}

function keyListing(r: Row): ApiKeyListing {
  return {
    id: r.id as string,
    account_id: r.account_id as string,
    name: (r.name as string | null) ?? null,
    prefix: r.prefix as string,
    created_at: int(r.created_at),
    revoked_at: r.revoked_at === null ? null : int(r.revoked_at),
    spend_limit: r.spend_limit === null ? null : int(r.spend_limit),
    limit_reset: (r.limit_reset as LimitReset | null) ?? null,
    expires_at: r.expires_at === null ? null : int(r.expires_at),
    models: r.models === null ? null : (JSON.parse(r.models as string) as string[]),
    rate_limit_rpm: r.rate_limit_rpm === null ? null : int(r.rate_limit_rpm),
    period_start: int(r.period_start),
    period_spent: int(r.period_spent),
    reserved: int(r.reserved) + int(r.leased ?? 0),
    spent: int(r.spent),
  };
}

const orNull = (v: unknown) => (v === null || v === undefined ? null : int(v));

export class PgAccountRecords implements AccountRecords {
  constructor(private readonly db: PgDatabase) {}

  async get(id: string): Promise<AccountRow | null> {
    const rows = (await this.db.ask((sql) => sql`SELECT * FROM accounts WHERE id = ${id}`)) as Row[];
    return rows[0] ? accountRow(rows[0]) : null;
  }

  async list(): Promise<AccountRow[]> {
    const rows = (await this.db.ask((sql) => sql`SELECT * FROM accounts ORDER BY created_at, id`)) as Row[];
    return rows.map(accountRow);
  }

  /** One statement: each field is set only when the patch names it. */
  async update(id: string, p: AccountPatch): Promise<boolean> {
    const rows = (await this.db.ask((sql) => sql`
      UPDATE accounts SET
        name = CASE WHEN ${p.name !== undefined} THEN ${p.name ?? null}::text ELSE name END,
        disabled = CASE WHEN ${p.disabled !== undefined} THEN ${p.disabled ? 1 : 0}::smallint ELSE disabled END,
        rate_limit_rpm = CASE WHEN ${p.rate_limit_rpm !== undefined} THEN ${p.rate_limit_rpm ?? null}::integer ELSE rate_limit_rpm END,
        concurrency_limit = CASE WHEN ${p.concurrency_limit !== undefined} THEN ${p.concurrency_limit ?? null}::integer ELSE concurrency_limit END
      WHERE id = ${id} RETURNING id`)) as Row[];
    return rows.length > 0;
  }
}

export class PgKeyRecords implements KeyRecords {
  constructor(private readonly db: PgDatabase) {}

  async insert(k: ApiKeyRow): Promise<void> {
    await this.db.ask((sql) => sql`
      INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, spend_limit, limit_reset, expires_at, models, rate_limit_rpm)
      VALUES (${k.id}, ${k.account_id}, ${k.name}, ${k.prefix}, ${k.hash}, ${k.created_at}, ${k.spend_limit}, ${k.limit_reset},
              ${k.expires_at}, ${k.models === null ? null : JSON.stringify(k.models)}, ${k.rate_limit_rpm})`);
  }

  /** One statement: each column is set only when the patch names it. */
  async update(id: string, p: KeyPatch): Promise<boolean> {
    const resetStart = p.limit_reset === undefined ? 0 : periodStart(p.limit_reset, Date.now());
    const rows = (await this.db.ask((sql) => sql`
      UPDATE api_keys SET
        name = CASE WHEN ${p.name !== undefined} THEN ${p.name ?? null}::text ELSE name END,
        spend_limit = CASE WHEN ${p.spend_limit !== undefined} THEN ${p.spend_limit ?? null}::bigint ELSE spend_limit END,
        limit_reset = CASE WHEN ${p.limit_reset !== undefined} THEN ${p.limit_reset ?? null}::text ELSE limit_reset END,
        -- A new reset period keeps what was spent in its current period (billing/key-periods.ts).
        period_spent = CASE WHEN ${p.limit_reset !== undefined} AND limit_reset IS DISTINCT FROM ${p.limit_reset ?? null}::text
                            THEN (SELECT COALESCE(SUM(-e.amount), 0) FROM ledger_entries e WHERE e.key_id = api_keys.id AND e.kind = 'charge' AND e.counted_at >= ${resetStart}::bigint)
                            ELSE period_spent END,
        period_start = CASE WHEN ${p.limit_reset !== undefined} AND limit_reset IS DISTINCT FROM ${p.limit_reset ?? null}::text THEN ${resetStart}::bigint ELSE period_start END,
        expires_at = CASE WHEN ${p.expires_at !== undefined} THEN ${p.expires_at ?? null}::bigint ELSE expires_at END,
        models = CASE WHEN ${p.models !== undefined} THEN ${p.models ? JSON.stringify(p.models) : null}::text ELSE models END,
        rate_limit_rpm = CASE WHEN ${p.rate_limit_rpm !== undefined} THEN ${p.rate_limit_rpm ?? null}::integer ELSE rate_limit_rpm END
      WHERE id = ${id} RETURNING id`)) as Row[];
    return rows.length > 0;
  }

  async get(id: string): Promise<ApiKeyListing | null> {
    const rows = (await this.db.ask((sql) => sql`SELECT * FROM api_keys WHERE id = ${id}`)) as Row[];
    return rows[0] ? keyListing(rows[0]) : null;
  }

  async usageSince(keyId: string, since: PeriodStarts): Promise<PeriodStarts> {
    const from = Math.min(since.day, since.week, since.month) - 86_400;
    const [r] = (await this.db.ask((sql) => sql`
      SELECT SUM(CASE WHEN e.counted_at >= ${since.day} THEN -e.amount ELSE 0 END) AS day,
             SUM(CASE WHEN e.counted_at >= ${since.week} THEN -e.amount ELSE 0 END) AS week,
             SUM(CASE WHEN e.counted_at >= ${since.month} THEN -e.amount ELSE 0 END) AS month
        FROM ledger_entries e
       WHERE e.key_id = ${keyId} AND e.kind = 'charge' AND e.counted_at >= ${from + 86_400}`)) as Row[];
    return { day: int(r?.day ?? 0), week: int(r?.week ?? 0), month: int(r?.month ?? 0) };
  }

  async revoke(id: string, at: number): Promise<boolean> {
    const rows = (await this.db.ask((sql) => sql`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${at}) WHERE id = ${id} RETURNING id`)) as Row[];
    return rows.length > 0;
  }

  async listForAccount(accountId: string): Promise<ApiKeyListing[]> {
    const rows = (await this.db.ask((sql) => sql`
      SELECT * FROM api_keys WHERE account_id = ${accountId} ORDER BY created_at, seq`)) as Row[];
    return rows.map(keyListing);
  }

  async ownerByHash(hash: string): Promise<KeyOwnerRow | null> {
    const rows = (await this.db.ask((sql) => sql`
      SELECT k.id, k.account_id, k.hash, k.revoked_at, a.disabled, a.rate_limit_rpm, a.concurrency_limit,
             k.spend_limit AS key_spend_limit, k.limit_reset AS key_limit_reset, k.expires_at AS key_expires_at, k.models AS key_models, k.rate_limit_rpm AS key_rate_limit_rpm
        FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ${hash}`)) as Row[];
    const r = rows[0];
    if (!r) return null;
    return {
      id: r.id as string,
      account_id: r.account_id as string,
      hash: r.hash as string,
      revoked_at: r.revoked_at === null ? null : int(r.revoked_at),
      disabled: int(r.disabled),
      rate_limit_rpm: r.rate_limit_rpm === null ? null : int(r.rate_limit_rpm),
      concurrency_limit: r.concurrency_limit === null ? null : int(r.concurrency_limit),
      key_spend_limit: orNull(r.key_spend_limit),
      key_limit_reset: (r.key_limit_reset as LimitReset | null) ?? null,
      key_expires_at: orNull(r.key_expires_at),
      key_models: (r.key_models as string | null) ?? null,
      key_rate_limit_rpm: orNull(r.key_rate_limit_rpm),
    };
  }
}
