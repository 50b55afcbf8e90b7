/**
 * One server per data directory. Two servers on one SQLite file would each believe they own every
 * pending hold (start-up voids them all) and split the in-memory limits, so a server takes an
 * exclusive OS-level lock for its whole life: `serve.lock`, a tiny SQLite database opened in
 * exclusive locking mode with a write transaction done, which keeps SQLite's POSIX lock on it until
 * the connection closes — or the process dies, when the OS drops it. A second server (in any
 * process, or the same one) finds the lock taken at start-up. The CLI never holds it: it writes to
 * switchyard.db through SQLite's ordinary locking, beside a running server — except deductions,
 * which it refuses while a server holds the directory (servedNow): the server keeps its holds in
 * memory, so only it knows what a deduction may take (the admin API goes through it).
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";

export const LOCK_FILE = "serve.lock";

export class DataDirLocked extends Error {}

export interface DataDirLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  const db = new Database(join(dataDir, LOCK_FILE), { create: true });
  try {
    db.run("PRAGMA busy_timeout = 0");
    db.run("PRAGMA locking_mode = EXCLUSIVE");
    // The first write in exclusive mode takes the EXCLUSIVE lock and keeps it after COMMIT.
    db.run("BEGIN EXCLUSIVE");
    db.run("CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since INTEGER)");
    db.run("DELETE FROM holder");
    db.run("INSERT INTO holder VALUES (?, ?)", [process.pid, Math.floor(Date.now() / 1000)]);
    db.run("COMMIT");
  } catch (e) {
    db.close();
    if ((e as { code?: string }).code?.startsWith("SQLITE_BUSY")) {
      throw new DataDirLocked("another Switchyard server is already serving this data directory");
    }
    throw e;
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      db.close();
    },
  };
}

/**
 * Whether a server holds the data directory now (its lock is taken). The CLI asks before a
 * deduction: a server keeps its holds in memory, so only it can tell what a deduction may take.
 */
export function servedNow(dataDir: string): boolean {
  try {
    lockDataDir(dataDir).release();
    return false;
  } catch (e) {
    if (e instanceof DataDirLocked) return true;
    return false;
  }
}
