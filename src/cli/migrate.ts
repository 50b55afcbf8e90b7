/**
 * `switchyard migrate`: brings the store's schema up to date and says where it stands. Start-up
 * does the same, so running it is optional; it lets an operator migrate once before rolling out
 * N instances. PostgreSQL migrations take an advisory lock, so it is safe beside starting
 * instances. Prints JSON; a database that cannot be reached is one line and exit code 2, naming
 * the variable but never echoing the URL (it holds a password).
 */
import type { Config } from "../config";
import { openStore, schemaVersion } from "../store/database";
import { PgDatabase } from "../store/postgres/database";
import { migratePostgres } from "../store/postgres/migrate";
import { join } from "node:path";
import { print } from "./output";

export async function runMigrateCommand(config: Config): Promise<number> {
  if (config.databaseUrl) {
    const db = new PgDatabase({ url: config.databaseUrl, pool: 1, applicationName: "switchyard-migrate" });
    try {
      const report = await migratePostgres(db.sql);
      print({ store: "postgresql", schema_version: report.version, applied: report.applied });
      return 0;
    } catch (e) {
      const why = (e as { errno?: string; code?: string }).errno ?? (e as { code?: string }).code ?? "error";
      process.stderr.write(`switchyard: cannot migrate the database named by SWITCHYARD_DATABASE_URL (postgres ${why})\n`);
      return 2;
    } finally {
      await db.close().catch(() => {});
    }
  }
  let store: ReturnType<typeof openStore>;
  try {
    store = openStore(config.dataDir);
  } catch (e) {
    process.stderr.write(`switchyard: cannot open the database in SWITCHYARD_DATA_DIR=${config.dataDir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})\n`);
    return 2;
  }
  try {
    print({ store: "sqlite", path: join(config.dataDir, "switchyard.db"), schema_version: schemaVersion(store) });
    return 0;
  } finally {
    store.close();
  }
}

