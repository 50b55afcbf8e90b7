/**
 * The SQLite store: one file in SWITCHYARD_DATA_DIR, WAL journal, FULL sync, versioned migrations.
 * Every process (server or CLI) opens it through here so pragmas and schema are always the same.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "./migrations/index";

export type Store = Database;

export interface StoreOptions {
  /**
   * How long a statement waits, blocking its thread, for another connection's write lock. The CLI
   * waits (5 s); a serving connection must never block its event loop, so the server passes 0 and
   * the ledger's group commit retries on a timer instead (store/sqlite/group-commit.ts).
   */
  busyTimeoutMs?: number;
}

/** Lock waits while migrating at start-up (blocking is harmless before serving). */
const MIGRATION_BUSY_TIMEOUT_MS = 5000;

export function openStore(dataDir: string, options: StoreOptions = {}): Store {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, "switchyard.db"), { create: true, strict: true });
  db.run(`PRAGMA busy_timeout = ${MIGRATION_BUSY_TIMEOUT_MS}`);
  db.run("PRAGMA journal_mode = WAL");
  // Every commit is fsynced: a settled charge survives power loss. Group commit amortises it
  // (and moves the WAL fsync off the event loop, see billing/group-commit.ts).
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA foreign_keys = ON");
  migrate(db);
  db.run(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? MIGRATION_BUSY_TIMEOUT_MS}`);
  return db;
}

export function schemaVersion(db: Store): number {
  return (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
}

/** Applies every migration newer than the file's user_version, each in its own transaction. */
export function migrate(db: Store): void {
  const current = schemaVersion(db);
  for (const m of MIGRATIONS) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.run(m.sql);
      db.run(`PRAGMA user_version = ${m.version}`);
    }).immediate();
  }
}
