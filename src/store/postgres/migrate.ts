/**
 * Applies the PostgreSQL migrations not yet applied, all in one transaction under a
 * transaction-level advisory lock: instances starting at once queue on the lock, and each one
 * after the first finds the schema already current. DDL is transactional in PostgreSQL, so a
 * migration that fails leaves nothing half-applied.
 */
import type { SQL } from "bun";
import { PG_MIGRATIONS, type PgMigration } from "./migrations/index";

/** pg_advisory_xact_lock(key1, key2): "SWYD", 1 — migrations. */
const LOCK_KEY_1 = 0x53575944;
const LOCK_KEY_2 = 1;

export interface MigrationReport {
  /** Versions applied by this call, in order (empty: the schema was current). */
  applied: number[];
  /** The schema version afterwards. */
  version: number;
}

export async function migratePostgres(sql: SQL, migrations: PgMigration[] = PG_MIGRATIONS): Promise<MigrationReport> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK_KEY_1}::int, ${LOCK_KEY_2}::int)`;
    await tx`CREATE TABLE IF NOT EXISTS switchyard_schema (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`;
    const done = new Set(((await tx`SELECT version FROM switchyard_schema`) as { version: number }[]).map((r) => r.version));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql).simple();
      await tx`INSERT INTO switchyard_schema (version, name) VALUES (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
    const version = Math.max(0, ...done, ...applied);
    return { applied, version };
  }) as Promise<MigrationReport>;
}

/** The applied schema version, 0 for an empty database. */
export async function pgSchemaVersion(sql: SQL): Promise<number> {
  const [row] = (await sql`SELECT to_regclass('switchyard_schema') IS NOT NULL AS present`) as { present: boolean }[];
  if (!row?.present) return 0;
  const [v] = (await sql`SELECT COALESCE(MAX(version), 0)::int AS version FROM switchyard_schema`) as { version: number }[];
  return v?.version ?? 0;
}
