/**
 * The SQLite store: one file in SWITCHYARD_DATA_DIR, WAL journal, FULL sync, versioned migrations.
 * Every process (server or CLI) opens it through here so pragmas and schema are always the same.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "./migrations/index";

export type Store = Database;

export function openStore(dataDir: string): Store {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, "switchyard.db"), { create: true, strict: true });
  // A writer waits for another process (the CLI, say) instead of failing at once.
  db.run("PRAGMA busy_timeout = 5000");
  db.run("PRAGMA journal_mode = WAL");
  // Every commit is fsynced: a settled charge survives power loss. Group commit amortises it
  // (and moves the WAL fsync off the event loop, see billing/group-commit.ts).
  db.run("PRAGMA synchronous = FULL");
  db.run("PRAGMA foreign_keys = ON");
  migrate(db);
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
