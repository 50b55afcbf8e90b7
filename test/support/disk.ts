/**
 * Storage failures on a real SQLite connection, for tests:
 *
 *   fillDisk(db)   a full disk. max_page_count caps the database at its current size and the free
 *                  space left is filled; then a temporary trigger (on this connection only) makes
 *                  every write to a ledger table allocate a page, so each one fails with SQLITE_FULL
 *                  from the engine's own page allocator — as on a full filesystem, where every WAL
 *                  append fails. restore() gives the space back.
 *   holdWriteLock(path)  another connection holding the database's write lock (as the CLI does
 *                  while it writes), until release().
 */
import { Database } from "bun:sqlite";

const TABLES = ["holds", "ledger_entries", "accounts", "responses"];
/** SQLite's default max_page_count. */
const UNLIMITED_PAGES = 4294967294;

export interface DiskFull {
  restore(): void;
}

/**
 * `tables` narrows which tables' writes fail (default: every ledger table): with only
 * ["ledger_entries"], say, a void (which writes no entry) still succeeds while a charge cannot.
 */
export function fillDisk(db: Database, tables: string[] = TABLES): DiskFull {
  db.run("CREATE TABLE IF NOT EXISTS disk_filler (b BLOB)");
  const pages = (db.query("PRAGMA page_count").get() as { page_count: number }).page_count;
  db.run(`PRAGMA max_page_count = ${pages}`);
  // The filler needs no fsync per row (a busy disk would make each one slow).
  const synchronous = (db.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
  db.run("PRAGMA synchronous = OFF");
  try {
    for (let i = 0; i < 100_000; i++) {
      try {
        db.run("INSERT INTO disk_filler VALUES (zeroblob(256))");
      } catch (e) {
        if ((e as { code?: string }).code !== "SQLITE_FULL") throw e;
        break;
      }
    }
  } finally {
    db.run(`PRAGMA synchronous = ${synchronous}`);
  }
  const triggers: string[] = [];
  for (const table of tables) {
    for (const op of ["INSERT", "UPDATE"]) {
      const name = `disk_full_${table}_${op.toLowerCase()}`;
      db.run(`CREATE TEMP TRIGGER IF NOT EXISTS ${name} AFTER ${op} ON main.${table} BEGIN INSERT INTO main.disk_filler VALUES (zeroblob(16384)); END`);
      triggers.push(name);
    }
  }
  let restored = false;
  return {
    restore() {
      if (restored) return;
      restored = true;
      for (const t of triggers) db.run(`DROP TRIGGER IF EXISTS temp.${t}`);
      db.run(`PRAGMA max_page_count = ${UNLIMITED_PAGES}`);
    },
  };
}

export interface WriteLock {
  release(): void;
}

/** Takes the write lock of the database file at `path` on a connection of its own. */
export function holdWriteLock(path: string): WriteLock {
  const other = new Database(path);
  other.run("PRAGMA busy_timeout = 5000");
  other.run("BEGIN IMMEDIATE");
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      other.run("COMMIT");
      other.close();
    },
  };
}
