/**
 * API keys: 256 random bits, shown once, stored as SHA-256 only.
 * Lookup goes by hash (an index), then the stored hash is compared in constant time,
 * so neither the database nor timing reveals anything about other keys.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Store } from "../store/database";
import { newId } from "./ids";
import { notFound } from "../http/errors";
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
}

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export class ApiKeys {
  private readonly byHash;

  constructor(private readonly db: Store) {
    this.byHash = db.query<{ id: string; account_id: string; hash: string; revoked_at: number | null; disabled: number }, [string]>(
      // A correlated subquery, not a JOIN: bun:sqlite ran the JOIN form ~10x slower (12 µs vs
      // 1.3 µs per lookup), and this runs on every authenticated request.
      `SELECT k.id, k.account_id, k.hash, k.revoked_at,
              (SELECT a.disabled FROM accounts a WHERE a.id = k.account_id) AS disabled
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

  /** The owner of a live key, or null when the key is unknown or revoked. */
  authenticate(presented: string): KeyOwner | null {
    const digest = hashKey(presented);
    const row = this.byHash.get(digest);
    if (!row || row.revoked_at !== null) return null;
    if (!timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(digest, "hex"))) return null;
    return { keyId: row.id, accountId: row.account_id, disabled: row.disabled === 1 };
  }
}
