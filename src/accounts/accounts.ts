/**
 * Accounts: the holder of one prepaid balance and one set of limits.
 * Used by the admin HTTP API and the CLI alike, so both behave identically. Accounts are created by
 * the ledger (Ledger.openAccount), together with their opening credits in one transaction. Where
 * the rows live is the store's business (AccountRecords: store/sqlite/accounts.ts,
 * store/postgres/accounts.ts).
 */
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

/** Fields an update may change; a field left out is left as it is (null limits: the default). */
export interface AccountPatch {
  name?: string;
  disabled?: boolean;
  rate_limit_rpm?: number | null;
  concurrency_limit?: number | null;
}

/** Where accounts are kept. Money columns are written only by the ledger's store. */
export interface AccountRecords {
  get(id: string): Promise<AccountRow | null>;
  /** Every account, oldest first. */
  list(): Promise<AccountRow[]>;
  /** Applies the patch in one transaction; false when there is no such account. */
  update(id: string, patch: AccountPatch): Promise<boolean>;
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
  constructor(private readonly records: AccountRecords) {}

  get(id: string): Promise<AccountRow | null> {
    return this.records.get(id);
  }

  async mustGet(id: string): Promise<AccountRow> {
    const row = await this.records.get(id);
    if (!row) throw notFound(`No account with id '${id}'.`);
    return row;
  }

  list(): Promise<AccountRow[]> {
    return this.records.list();
  }

  async update(id: string, patch: AccountPatch): Promise<AccountRow> {
    if (!(await this.records.update(id, patch))) throw notFound(`No account with id '${id}'.`);
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

