/**
 * The keep-alive pool of the upstream HTTP/1.1 client: idle connections by pool key, where a key
 * is an origin and a partition (the account, so that a connection one account used never carries
 * another account's request: a late reply on it reaches no one else). Two caps keep the count
 * sane whatever the number of accounts: idle connections per origin and in all; past either, the
 * oldest idle connection goes (the newest has the longest left to live).
 */
import type { Connection } from "./connection";

export interface PoolLimits {
  /** Idle connections kept per origin, all partitions together. */
  maxIdlePerOrigin: number;
  /** Idle connections kept in all. */
  maxIdle: number;
  /** The kernel receive buffer of each new connection, in bytes (0 or absent: the system's own; see runtime/memory.ts, capReceiveBuffer). */
  receiveBufferBytes?: number;
}

export const DEFAULT_POOL_LIMITS: PoolLimits = { maxIdlePerOrigin: 64, maxIdle: 256 };

/** An idle pooled connection older than this is closed rather than reused (servers often drop idle connections after 5 s). */
export const KEEP_IDLE_MS = 4_000;

/** The pool key of an origin and a partition. */
export const poolKey = (origin: string, partition: string): string => (partition === "" ? origin : `${origin} ${partition}`);

export class ConnectionPool {
  /** Per key, newest last (reused first, so the oldest age out). */
  private readonly byKey = new Map<string, Connection[]>();
  /** Every idle connection, oldest first (a Set keeps insertion order). */
  private readonly all = new Set<Connection>();
  private readonly perOrigin = new Map<string, number>();
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(
    /** Closes a connection (which takes it out of its pool through remove()). */
    private readonly close: (conn: Connection) => void,
    readonly limits: PoolLimits = DEFAULT_POOL_LIMITS,
  ) {}

  /** The newest usable idle connection of `key`, taken out of the pool; stale ones are closed. */
  take(key: string): Connection | null {
    const list = this.byKey.get(key);
    const now = Date.now();
    while (list && list.length > 0) {
      const conn = list[list.length - 1]!;
      this.remove(conn);
      if (!conn.closed && now - conn.idleSince < KEEP_IDLE_MS) return conn;
      this.close(conn);
    }
    return null;
  }

  /** Keeps an idle connection, making room under both caps first. */
  put(conn: Connection): void {
    if (this.limits.maxIdle === 0 || this.limits.maxIdlePerOrigin === 0) return this.close(conn);
    while ((this.perOrigin.get(conn.origin) ?? 0) >= this.limits.maxIdlePerOrigin) this.close(this.oldest(conn.origin)!);
    while (this.all.size >= this.limits.maxIdle) this.close(this.oldest(null)!);
    let list = this.byKey.get(conn.key);
    if (list === undefined) this.byKey.set(conn.key, (list = []));
    list.push(conn);
    this.all.add(conn);
    this.perOrigin.set(conn.origin, (this.perOrigin.get(conn.origin) ?? 0) + 1);
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => this.sweep(), 1_000);
      this.sweeper.unref?.();
    }
  }

  /** Takes a connection out of the pool (when it closes, or is taken); no-op when not in it. */
  remove(conn: Connection): void {
    if (!this.all.delete(conn)) return;
    const list = this.byKey.get(conn.key)!;
    list.splice(list.lastIndexOf(conn), 1);
    if (list.length === 0) this.byKey.delete(conn.key);
    const n = this.perOrigin.get(conn.origin)! - 1;
    if (n === 0) this.perOrigin.delete(conn.origin);
    else this.perOrigin.set(conn.origin, n);
  }

  /** Idle connections of one origin (all partitions), or in all. */
  idle(origin?: string): number {
    return origin === undefined ? this.all.size : (this.perOrigin.get(origin) ?? 0);
  }

  /** Closes every idle connection (the server is stopping). */
  closeAll(): void {
    for (const conn of [...this.all]) this.close(conn);
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  private oldest(origin: string | null): Connection | undefined {
    for (const conn of this.all) if (origin === null || conn.origin === origin) return conn;
    return undefined;
  }

  private sweep(): void {
    const now = Date.now();
    for (const conn of [...this.all]) if (now - conn.idleSince >= KEEP_IDLE_MS) this.close(conn);
  }
}
