/**
 * API keys: 256 random bits, shown once, stored as SHA-256 only.
 * Lookup goes by hash (an index), then the stored hash is compared in constant time,
 * so neither the database nor timing reveals anything about other keys. Where the rows live is
 * the store's business (KeyRecords: store/sqlite/accounts.ts, store/postgres/accounts.ts).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { newId } from "./ids";
import { notFound } from "../errors";
import { nowSeconds } from "./accounts";
import type { LimitReset, PeriodStarts } from "../billing/key-periods";

export const KEY_PREFIX = "sy-";

/** A key's own controls (docs/operate.md, "Keys: limits, expiry, models"); null: none. */
export interface KeyControls {
  /** Spend limit in units (nano-USD) per period. */
  spend_limit: number | null;
  limit_reset: LimitReset | null;
  /** Unix seconds. */
  expires_at: number | null;
  /** Public model ids or aliases the key may use. */
  models: string[] | null;
  rate_limit_rpm: number | null;
}

export const NO_CONTROLS: KeyControls = { spend_limit: null, limit_reset: null, expires_at: null, models: null, rate_limit_rpm: null };

export interface ApiKeyRow extends KeyControls {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  hash: string;
  created_at: number;
  revoked_at: number | null;
}

/** A key as listed: no hash, with the running figures of its spend limit (units). */
export interface ApiKeyListing extends Omit<ApiKeyRow, "hash"> {
  /** Start of the period `period_spent` belongs to (Unix seconds; 0 when the limit never resets). */
  period_start: number;
  period_spent: number;
  /** Σ of the key's pending holds. */
  reserved: number;
  /** Every charge made with the key. */
  spent: number;
}

/** Fields a key update may change; a field left out stays as it is. */
export type KeyPatch = Partial<KeyControls> & { name?: string | null };

/** A key found by its hash, with what its account's requests need (no account read per request). */
export interface KeyOwnerRow {
  id: string;
  account_id: string;
  hash: string;
  revoked_at: number | null;
  disabled: number;
  rate_limit_rpm: number | null;
  concurrency_limit: number | null;
  key_spend_limit: number | null;
  key_limit_reset: LimitReset | null;
  key_expires_at: number | null;
  /** JSON array text, or null. */
  key_models: string | null;
  key_rate_limit_rpm: number | null;
}

/** Where keys are kept. */
export interface KeyRecords {
  insert(k: ApiKeyRow): Promise<void>;
  /** Marks the key revoked (the first revocation's time is kept); false when there is no such key. */
  revoke(id: string, at: number): Promise<boolean>;
  /** Applies the patch in one statement; false when there is no such key. */
  update(id: string, patch: KeyPatch): Promise<boolean>;
  /** One key without its hash, or null. */
  get(id: string): Promise<ApiKeyListing | null>;
  /** The account's keys, oldest first, without their hashes. */
  listForAccount(accountId: string): Promise<ApiKeyListing[]>;
  /** Σ of the key's charges made since each period start (units). */
  usageSince(keyId: string, since: PeriodStarts): Promise<PeriodStarts>;
  /**
   * The key with this hash and its account's flags and limits. Synchronous where the store can
   * answer without waiting (SQLite, in process), a promise where it must ask a server.
   */
  ownerByHash(hash: string): KeyOwnerRow | null | Promise<KeyOwnerRow | null>;
  /**
   * Synchronous and cheap: true when another process may have changed keys or accounts since the
   * last call (SQLite: its data_version moved, read at most once per turn of the event loop). A store that pushes changes instead (PostgreSQL's
   * change feed calls ApiKeys.forget()) leaves it out.
   */
  changedElsewhere?(): boolean;
}

export interface KeyOwner {
  keyId: string;
  accountId: string;
  disabled: boolean;
  /** The account's own limit overrides (null: the configured default), cached with the owner. */
  rateLimitRpm: number | null;
  concurrencyLimit: number | null;
  /** The key's own controls, cached with the owner. */
  key: {
    /** Units, or null: the hold reads the limit itself; this says whether there is one (dashboard scope). */
    spendLimit: number | null;
    limitReset: LimitReset | null;
    /** Unix seconds, or null. */
    expiresAt: number | null;
    models: readonly string[] | null;
    rateLimitRpm: number | null;
  };
}

/** SHA-256 of the key, hex (Bun's one-shot hasher: a third of node:crypto's cost per request). */
export function hashKey(key: string): string {
  return Bun.SHA256.hash(key, "hex") as string;
}

/**
 * How long a live key's owner is served from memory. A revocation or disable made in this process
 * clears the cache at once (revoke(), forget()); one made elsewhere is seen by every request sent
 * after it when the store can tell (SQLite's data_version, read once per turn of the event loop;
 * PostgreSQL's change feed calls forget() within milliseconds), and at the latest after this TTL.
 */
export const KEY_CACHE_TTL_MS = 1000;
/** Bounds the memory a flood of distinct valid keys could take; the cache simply starts over. */
const KEY_CACHE_MAX = 10_000;

export class ApiKeys {
  /** Owners of live keys, by key hash (never by the key itself), valid until `until` (ms). */
  private readonly cache = new Map<string, { owner: KeyOwner; until: number }>();
  /** Moves on every forget(): a lookup that was in flight across it must not refill the cache. */
  private generation = 0;
  /**
   * Lookups the store is answering now, by key hash: a burst of requests with one uncached key
   * asks the store once. Emptied by forget(), so nobody joins a lookup older than a change.
   */
  private readonly asking = new Map<string, Promise<KeyOwnerRow | null>>();

  constructor(private readonly records: KeyRecords) {}

  /** Creates a key; the plaintext is returned here and never again. */
  async create(accountId: string, name: string | null, controls: KeyControls = NO_CONTROLS): Promise<{ id: string; key: string; prefix: string; account_id: string; name: string | null }> {
    const key = KEY_PREFIX + randomBytes(32).toString("base64url");
    const id = newId("key");
    const prefix = key.slice(0, 10);
    await this.records.insert({ id, account_id: accountId, name, prefix, hash: hashKey(key), created_at: nowSeconds(), revoked_at: null, ...controls });
    return { id, key, prefix, account_id: accountId, name };
  }

  /** Changes a key's name or controls; they bite on the next request here (the cache is dropped). */
  async update(id: string, patch: KeyPatch): Promise<ApiKeyListing> {
    let found: boolean;
    try {
      found = await this.records.update(id, patch);
    } finally {
      this.forget();
    }
    if (!found) throw notFound(`No API key with id '${id}'.`);
    return (await this.records.get(id))!;
  }

  get(id: string): Promise<ApiKeyListing | null> {
    return this.records.get(id);
  }

  usageSince(keyId: string, since: PeriodStarts): Promise<PeriodStarts> {
    return this.records.usageSince(keyId, since);
  }

  async revoke(id: string): Promise<{ id: string; object: "api_key"; revoked: true }> {
    let found: boolean;
    try {
      found = await this.records.revoke(id, nowSeconds());
    } finally {
      this.forget();
    }
    if (!found) throw notFound(`No API key with id '${id}'.`);
    return { id, object: "api_key", revoked: true };
  }

  listForAccount(accountId: string): Promise<ApiKeyListing[]> {
    return this.records.listForAccount(accountId);
  }

  /** Drops every cached owner: call after revoking a key or changing an account's `disabled` or limits. */
  forget(): void {
    this.generation++;
    this.cache.clear();
    this.asking.clear();
  }

  /**
   * The owner of a live key, or null when the key is unknown or revoked. Only live keys are
   * cached, so a key created elsewhere works at once and unknown keys cannot fill the cache.
   * A cache hit (and any SQLite lookup) answers synchronously; a lookup the store must ask a
   * server for returns a promise.
   */
  authenticate(presented: string): KeyOwner | null | Promise<KeyOwner | null> {
    const digest = hashKey(presented);
    const now = Date.now();
    // Another process (the CLI, say) committed something: it may have revoked or disabled.
    if (this.records.changedElsewhere?.()) this.forget();
    const hit = this.cache.get(digest);
    if (hit && hit.until > now) return hit.owner;
    const generation = this.generation;
    const asked = this.asking.get(digest);
    if (asked) return asked.then((r) => this.owner(digest, r, now, generation));
    const row = this.records.ownerByHash(digest);
    if (!(row instanceof Promise)) return this.owner(digest, row, now, generation);
    this.asking.set(digest, row);
    const done = () => {
      if (this.asking.get(digest) === row) this.asking.delete(digest);
    };
    row.then(done, done);
    return row.then((r) => this.owner(digest, r, now, generation));
  }

  private owner(digest: string, row: KeyOwnerRow | null, now: number, generation: number): KeyOwner | null {
    if (!row || row.revoked_at !== null) return null;
    if (!timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(digest, "hex"))) return null;
    const owner: KeyOwner = {
      keyId: row.id, accountId: row.account_id, disabled: row.disabled === 1,
      rateLimitRpm: row.rate_limit_rpm, concurrencyLimit: row.concurrency_limit,
      key: {
        spendLimit: row.key_spend_limit, limitReset: row.key_limit_reset, expiresAt: row.key_expires_at,
        models: row.key_models === null ? null : (JSON.parse(row.key_models) as string[]), rateLimitRpm: row.key_rate_limit_rpm,
      },
    };
    if (generation !== this.generation) return owner;
    if (this.cache.size >= KEY_CACHE_MAX) this.cache.clear();
    this.cache.set(digest, { owner, until: now + KEY_CACHE_TTL_MS });
    return owner;
  }
}
