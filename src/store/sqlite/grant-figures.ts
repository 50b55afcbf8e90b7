/**
 * What a hold is granted against (ledger-store.ts grant), read from the database once and then
 * served from memory: an account's balance and the amount an older version left reserved, and a
 * key's spend limit and spend figures. A grant at gateway rates otherwise pays two reads, each
 * opening its own read transaction (~2.5 µs apiece here), for figures that change only when a
 * request of this same process is charged.
 *
 * A cached figure is forgotten whenever it may have changed:
 *   - a write of this process that changes it forgets it as the write runs, before its commit
 *     (the ledger's charges and credits, a key's update): the next grant reads it again;
 *   - a commit of any other connection (the CLI adding credits beside the server) forgets them
 *     all: ForeignCommits notices from the next turn of the event loop on.
 * A figure is read outside any transaction (between group commits), so what is cached is always
 * committed state; holds in flight are the hold book's, never part of these figures.
 *
 * One cache per connection (`GrantFigures.of`), so that every writer on it forgets in the same one.
 */
import type { Store } from "../database";
import type { KeySpend } from "../../billing/key-periods";
import { ForeignCommits } from "./foreign-commits";

export interface AccountFigures {
  balance: number;
  reserved: number;
}

/** A key's limit and the spend figures its limit is checked against (billing/key-periods.ts). */
export type KeyFigures = KeySpend & { spend_limit: number | null };

/** Bounds the memory a flood of accounts and keys could take; the cache simply starts over. */
const MAX_ENTRIES = 10_000;

export class GrantFigures {
  private readonly accounts = new Map<string, AccountFigures>();
  /** By key id, with the account it was read under: a key is only ever found under its own account. */
  private readonly keys = new Map<string, { accountId: string; figures: KeyFigures }>();
  private readonly foreign: ForeignCommits;
  private epoch: number;
  private readonly q;

  private constructor(db: Store) {
    this.foreign = ForeignCommits.of(db);
    this.epoch = this.foreign.epoch();
    this.q = {
      account: db.query<AccountFigures, [string]>("SELECT balance, reserved FROM accounts WHERE id = ?"),
      key: db.query<KeyFigures, [string, string]>("SELECT spend_limit, limit_reset, period_start, period_spent FROM api_keys WHERE id = ? AND account_id = ?"),
    };
  }

  account(id: string): AccountFigures | null {
    this.dropIfChangedElsewhere();
    let f = this.accounts.get(id);
    if (f) return f;
    f = this.q.account.get(id) ?? undefined;
    if (!f) return null;
    if (this.accounts.size >= MAX_ENTRIES) this.accounts.clear();
    this.accounts.set(id, f);
    return f;
  }

  key(id: string, accountId: string): KeyFigures | null {
    this.dropIfChangedElsewhere();
    const cached = this.keys.get(id);
    if (cached && cached.accountId === accountId) return cached.figures;
    const figures = this.q.key.get(id, accountId);
    if (!figures) return null;
    if (this.keys.size >= MAX_ENTRIES) this.keys.clear();
    this.keys.set(id, { accountId, figures });
    return figures;
  }

  forgetAccount(id: string): void {
    this.accounts.delete(id);
  }

  forgetKey(id: string): void {
    this.keys.delete(id);
  }

  forgetAll(): void {
    this.accounts.clear();
    this.keys.clear();
  }

  private dropIfChangedElsewhere(): void {
    const e = this.foreign.epoch();
    if (e === this.epoch) return;
    this.epoch = e;
    this.forgetAll();
  }

  private static readonly byConnection = new WeakMap<Store, GrantFigures>();

  static of(db: Store): GrantFigures {
    let f = GrantFigures.byConnection.get(db);
    if (!f) GrantFigures.byConnection.set(db, (f = new GrantFigures(db)));
    return f;
  }
}
