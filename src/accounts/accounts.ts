/**
 * Accounts: the holder of one prepaid balance and one set of limits.
 * Used by the admin HTTP API and the CLI alike, so both behave identically.
 */
import type { Store } from "../store/database";
import { newId } from "./ids";
import { invalidField, notFound } from "../errors";
import { usdNumber } from "../billing/money";

export interface AccountRow {
  id: string;
  name: string;
  balance: number;
  reserved: number;
  disabled: number;
  rate_limit_rpm: number | null;
  concurrency_limit: number | null;
  created_at: number;
}

export interface LimitDefaults {
  rateLimitRpm: number;
  concurrencyLimit: number;
}

/** The account as the admin API and CLI show it: money in exact USD numbers. */
export function accountView(row: AccountRow, defaults: LimitDefaults) {
  return {
    id: row.id,
    object: "account",
    name: row.name,
    balance: usdNumber(row.balance),
    reserved: usdNumber(row.reserved),
    available: usdNumber(row.balance - row.reserved),
    disabled: row.disabled === 1,
    rate_limit_rpm: row.rate_limit_rpm ?? defaults.rateLimitRpm,
    concurrency_limit: row.concurrency_limit ?? defaults.concurrencyLimit,
    created_at: row.created_at,
  };
}

export class Accounts {
  private readonly byId;
  private readonly all;

  constructor(private readonly db: Store) {
    this.byId = db.query<AccountRow, [string]>("SELECT * FROM accounts WHERE id = ?");
    this.all = db.query<AccountRow, []>("SELECT * FROM accounts ORDER BY created_at, id");
  }

  get(id: string): AccountRow | null {
    return this.byId.get(id);
  }

  mustGet(id: string): AccountRow {
    const row = this.get(id);
    if (!row) throw notFound(`No account with id '${id}'.`);
    return row;
  }

  list(): AccountRow[] {
    return this.all.all();
  }

  create(name: string): AccountRow {
    const id = newId("acct");
    this.db.query("INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)").run(id, name, nowSeconds());
    return this.mustGet(id);
  }

  update(id: string, patch: { disabled?: boolean; rate_limit_rpm?: number | null; concurrency_limit?: number | null; name?: string }): AccountRow {
    this.mustGet(id);
    this.db.transaction(() => {
      if (patch.name !== undefined) this.db.query("UPDATE accounts SET name = ? WHERE id = ?").run(patch.name, id);
      if (patch.disabled !== undefined) this.db.query("UPDATE accounts SET disabled = ? WHERE id = ?").run(patch.disabled ? 1 : 0, id);
      if (patch.rate_limit_rpm !== undefined) this.db.query("UPDATE accounts SET rate_limit_rpm = ? WHERE id = ?").run(patch.rate_limit_rpm, id);
      if (patch.concurrency_limit !== undefined) this.db.query("UPDATE accounts SET concurrency_limit = ? WHERE id = ?").run(patch.concurrency_limit, id);
    }).immediate();
    return this.mustGet(id);
  }
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** Validates a limit override: a positive whole number, or null to fall back to the default. */
/** The largest overrides accepted, the same bounds as SWITCHYARD_RATE_LIMIT_RPM / _CONCURRENCY_LIMIT. */
export const LIMIT_MAXIMUM = { rate_limit_rpm: 10_000_000, concurrency_limit: 1_000_000 } as const;

export function parseLimit(field: keyof typeof LIMIT_MAXIMUM, value: unknown): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  const max = LIMIT_MAXIMUM[field];
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    throw invalidField(field, `must be a whole number from 1 to ${max}, or null for the default`);
  }
  return value;
}

