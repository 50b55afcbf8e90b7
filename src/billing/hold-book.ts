/**
 * The holds this process has open, in memory: per account and per key, the sum of what its
 * requests in flight hold. A hold is a reservation against what the store lets this process spend
 * (SQLite: the account's balance and the key's limit; PostgreSQL: this instance's leases), so
 * taking one writes nothing: only charges are durable. After a crash no hold survives — nothing
 * was written for it, so nothing is left to void.
 *
 * Invariants, asserted on every change (a broken one is a bug: it throws before money moves):
 *   held(account) = Σ amounts of its open holds ≥ 0, and the same per key;
 *   a request id has at most one open hold.
 */
import { InternalError } from "../errors";

export interface BookedHold {
  requestId: string;
  accountId: string;
  /** The key whose spend limit the hold counts against, if any. */
  keyId: string | null;
  amount: number;
  /** Unix seconds, by the ledger's clock: the hold expires by it, and its key's period is read from it. */
  createdAt: number;
}

export class HoldBook {
  private readonly holds = new Map<string, BookedHold>();
  private readonly byAccount = new Map<string, number>();
  private readonly byKey = new Map<string, number>();

  /** What this process holds for the account's requests in flight. */
  held(accountId: string): number {
    return this.byAccount.get(accountId) ?? 0;
  }

  /** What this process holds against the key's spend limit. */
  heldByKey(keyId: string): number {
    return this.byKey.get(keyId) ?? 0;
  }

  get size(): number {
    return this.holds.size;
  }

  has(requestId: string): boolean {
    return this.holds.has(requestId);
  }

  add(h: BookedHold): void {
    if (!Number.isSafeInteger(h.amount) || h.amount < 0) throw new InternalError(`hold book: bad amount ${h.amount} for ${h.requestId}`);
    if (this.holds.has(h.requestId)) throw new InternalError(`hold book: ${h.requestId} already holds`);
    this.holds.set(h.requestId, h);
    bump(this.byAccount, h.accountId, h.amount);
    if (h.keyId !== null) bump(this.byKey, h.keyId, h.amount);
  }

  /** Closes an open hold (charged or released); false when it was not open. */
  remove(requestId: string): boolean {
    const h = this.holds.get(requestId);
    if (!h) return false;
    this.holds.delete(requestId);
    bump(this.byAccount, h.accountId, -h.amount);
    if (h.keyId !== null) bump(this.byKey, h.keyId, -h.amount);
    return true;
  }

  /** How many holds the account has open (a scan: for tests and diagnostics, not the request path). */
  openFor(accountId: string): number {
    let n = 0;
    for (const h of this.holds.values()) if (h.accountId === accountId) n++;
    return n;
  }

  /** Open holds taken before `createdBefore` (Unix seconds). */
  olderThan(createdBefore: number): BookedHold[] {
    const out: BookedHold[] = [];
    for (const h of this.holds.values()) if (h.createdAt < createdBefore) out.push(h);
    return out;
  }

  /** Accounts with open holds, and what each holds (the store's live `reserved`). */
  accounts(): ReadonlyMap<string, number> {
    return this.byAccount;
  }

  keys(): ReadonlyMap<string, number> {
    return this.byKey;
  }
}

function bump(sums: Map<string, number>, id: string, by: number): void {
  const next = (sums.get(id) ?? 0) + by;
  if (next < 0 || !Number.isSafeInteger(next)) throw new InternalError(`hold book: ${id} would hold ${next}`);
  if (next === 0) sums.delete(id);
  else sums.set(id, next);
}
