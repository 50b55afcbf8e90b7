/**
 * Whether another connection (the CLI, say) has committed to the database since a reader last
 * looked: SQLite's `PRAGMA data_version` moves on every commit made by any other connection, never
 * on this connection's own. Reading it costs a statement (more than a cached lookup), so it is
 * read at most once per turn of the event loop and the answer is shared by everyone who asks on
 * that connection (the key cache, the ledger's cached balances): a commit made elsewhere is seen
 * from the next turn on, so by every request sent after it.
 */
import type { Store } from "../database";

export class ForeignCommits {
  private readonly version;
  private seenVersion = -1;
  /** Moves each time data_version is found to have moved. */
  private count = 0;
  private fresh = false;
  private readonly stale = () => {
    this.fresh = false;
  };

  private constructor(db: Store) {
    this.version = db.query<{ data_version: number }, []>("PRAGMA data_version");
  }

  /** A number that changes whenever another connection has committed (checked once per turn). */
  epoch(): number {
    if (this.fresh) return this.count;
    this.fresh = true;
    setImmediate(this.stale);
    const v = this.version.get()!.data_version;
    if (v !== this.seenVersion) {
      this.seenVersion = v;
      this.count++;
    }
    return this.count;
  }

  private static readonly byConnection = new WeakMap<Store, ForeignCommits>();

  /** The one watcher of a connection, so that one read per turn serves every reader of it. */
  static of(db: Store): ForeignCommits {
    let w = ForeignCommits.byConnection.get(db);
    if (!w) ForeignCommits.byConnection.set(db, (w = new ForeignCommits(db)));
    return w;
  }
}
