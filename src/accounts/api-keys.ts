/**
 * API keys: 256 random bits, shown once, stored as SHA-256 only.
 * Lookup goes by hash (an index), then the stored hash is compared in constant time,
 * so neither the database nor timing reveals anything about other keys.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Store } from "../store/database";
import { newId } from "./ids";
import { notFound } from "../errors";
import { nowSeconds } from "./accounts";

export const KEY_PREFIX = "sy-";

export interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  hash: string;
  created_at: number;
  revoked_at: number | null;
}

export interface KeyOwner {
  keyId: string;
  accountId: string;
  disabled: boolean;
  /** The account's own limit overrides (null: the configured default), cached with the owner. */
  rateLimitRpm: number | null;
  concurrencyLimit: number | null;
}

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * How long a live key's owner is served from memory. A revocation or disable made in this process
 * clears the cache at once (revoke(), forget()); one made by the CLI from another process is seen
 * at the next lookup, since any commit by another connection changes SQLite's data_version, and
 * at the latest after this TTL.
 */
export const KEY_CACHE_TTL_MS = 1000;
/** Bounds the memory a flood of distinct valid keys could take; the cache simply starts over. */
const KEY_CACHE_MAX = 10_000;

export class ApiKeys {
  private readonly byHash;
  private readonly dataVersion;
  /** Owners of live keys, by key hash (never by the key itself), valid until `until` (ms). */
  private readonly cache = new Map<string, { owner: KeyOwner; until: number }>();
  private seenVersion = -1;

  constructor(private readonly db: Store) {
    this.dataVersion = db.query<{ data_version: number }, []>("PRAGMA data_version");
    this.byHash = db.query<
      { id: string; account_id: string; hash: string; revoked_at: number | null; disabled: number; rate_limit_rpm: number | null; concurrency_limit: number | null },
      [string]
    >(
      // Correlated subqueries, not a JOIN: bun:sqlite ran the JOIN form ~10x slower (12 µs vs
      // 1.3 µs per lookup). The limits come along so a cache hit needs no account read at all.
      `SELECT k.id, k.account_id, k.hash, k.revoked_at,
              (SELECT a.disabled FROM accounts a WHERE a.id = k.account_id) AS disabled,
              (SELECT a.rate_limit_rpm FROM accounts a WHERE a.id = k.account_id) AS rate_limit_rpm,
              (SELECT a.concurrency_limit FROM accounts a WHERE a.id = k.account_id) AS concurrency_limit
         FROM api_keys k WHERE k.hash = ?`,
    );
  }

  /** Creates a key; the plaintext is returned here and never again. */
  create(accountId: string, name: string | null): { id: string; key: string; prefix: string; account_id: string; name: string | null } {
    const key = KEY_PREFIX + randomBytes(32).toString("base64url");
    const id = newId("key");
    const prefix = key.slice(0, 10);
    this.db
      .query("INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(id, accountId, name, prefix, hashKey(key), nowSeconds());
    return { id, key, prefix, account_id: accountId, name };
  }

  revoke(id: string): { id: string; object: "api_key"; revoked: true } {
    const res = this.db.query("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(nowSeconds(), id);
    this.forget();
    if (res.changes === 0) throw notFound(`No API key with id '${id}'.`);
    return { id, object: "api_key", revoked: true };
  }

  listForAccount(accountId: string) {
    return this.db
      .query<Omit<ApiKeyRow, "hash">, [string]>(
        "SELECT id, account_id, name, prefix, created_at, revoked_at FROM api_keys WHERE account_id = ? ORDER BY created_at",
      )
      .all(accountId);
  }

  /** Drops every cached owner: call after revoking a key or changing an account's `disabled` or limits. */
  forget(): void {
    this.cache.clear();
  }

  /**
   * The owner of a live key, or null when the key is unknown or revoked. Only live keys are
   * cached, so a key created elsewhere works at once and unknown keys cannot fill the cache.
   */
  authenticate(presented: string): KeyOwner | null {
    const digest = hashKey(presented);
    const now = Date.now();
    const version = this.dataVersion.get()!.data_version;
    if (version !== this.seenVersion) {
      // Another connection (the CLI, say) committed something: it may have revoked or disabled.
      this.seenVersion = version;
      this.cache.clear();
    }
    const hit = this.cache.get(digest);
    if (hit && hit.until > now) return hit.owner;
    const row = this.byHash.get(digest);
    if (!row || row.revoked_at !== null) return null;
    if (!timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(digest, "hex"))) return null;
    const owner: KeyOwner = {
      keyId: row.id, accountId: row.account_id, disabled: row.disabled === 1,
      rateLimitRpm: row.rate_limit_rpm, concurrencyLimit: row.concurrency_limit,
    };
    if (this.cache.size >= KEY_CACHE_MAX) this.cache.clear();
    this.cache.set(digest, { owner, until: now + KEY_CACHE_TTL_MS });
    return owner;
  }
}
