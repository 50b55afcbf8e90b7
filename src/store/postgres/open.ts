/**
 * Opens everything an instance keeps in PostgreSQL, in start-up order: the pool, the migrations
 * (advisory-locked, so N instances starting together migrate once), this instance's registration,
 * the release of whatever its previous run left behind, heartbeats with survivor passes, and the
 * change feed. close() undoes it in reverse, releasing this run so nobody waits for its timeout.
 *
 * The instance's name is kept in its data directory (`instance-name`), so a restart finds the
 * holds and slots of its previous run by name and releases them at once. One server per data
 * directory (the serve lock) is what makes that name unique among live instances.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ConfigError, type Config } from "../../config";
import { PgDatabase } from "./database";
import { migratePostgres } from "./migrate";
import { InstanceRegistry, type Released } from "./instances";
import { PostgresLedgerStore } from "./ledger-store";
import { PostgresLimiter } from "./limiter";
import { listenForChanges, type Change, type ChangeFeed } from "./changes";

export interface PostgresStores {
  db: PgDatabase;
  registry: InstanceRegistry;
  ledger: PostgresLedgerStore;
  limiter: PostgresLimiter;
  /** Holds and slots of this instance's previous run, released at start. */
  releasedAtStart: { holdsVoided: number; slotsReleased: number };
  close(): Promise<void>;
}

export interface OpenHooks {
  /** A key, an account's disabled flag or limits changed somewhere ("*": anything may have). */
  onChange(c: Change): void;
  onReleasedOther?(r: Released): void;
  onReregistered?(oldId: string, newId: string): void;
  onBeatError?(e: unknown): void;
}

/** This instance's stable name, kept in its data directory. */
export function instanceName(dataDir: string): string {
  const file = join(dataDir, "instance-name");
  try {
    const name = readFileSync(file, "utf8").trim();
    if (/^[A-Za-z0-9._-]{1,100}$/.test(name)) return name;
  } catch {
    // first start in this directory
  }
  const host = hostname().replace(/[^A-Za-z0-9.-]/g, "-").slice(0, 60) || "host";
  const name = `${host}-${randomBytes(4).toString("hex")}`;
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, name + "\n");
  return name;
}

export async function openPostgres(config: Config, maxBalance: number, hooks: OpenHooks): Promise<PostgresStores> {
  if (!config.databaseUrl) throw new Error("openPostgres without SWITCHYARD_DATABASE_URL");
  const db = new PgDatabase({ url: config.databaseUrl, pool: config.databasePool });
  let changes: ChangeFeed | null = null;
  let registry: InstanceRegistry | null = null;
  try {
    await migratePostgres(db.sql);
    registry = new InstanceRegistry(db, {
      name: instanceName(config.dataDir),
      timeoutMs: config.instanceTimeoutMs,
      onReleasedOther: hooks.onReleasedOther,
      onReregistered: hooks.onReregistered,
      onError: hooks.onBeatError,
    });
    await registry.register();
    const releasedAtStart = await registry.releasePrevious();
    const ledger = new PostgresLedgerStore(db, registry, { maxBalance });
    const limiter = new PostgresLimiter(db, registry, ledger);
    registry.start();
    changes = await listenForChanges(db, hooks.onChange);
    const reg = registry;
    const feed = changes;
    return {
      db, registry: reg, ledger, limiter, releasedAtStart,
      async close() {
        await feed.close().catch(() => {});
        await ledger.flush().catch(() => {});
        await limiter.flush().catch(() => {});
        await reg.stop().catch(() => {});
        await db.close().catch(() => {});
      },
    };
  } catch (e) {
    registry?.halt();
    await changes?.close().catch(() => {});
    await db.close().catch(() => {});
    const why = (e as { errno?: string }).errno ?? (e as { code?: string }).code ?? (e as Error).constructor?.name ?? "error";
    // Never the URL itself: it holds a password.
    throw new ConfigError("SWITCHYARD_DATABASE_URL", `cannot open the PostgreSQL database (postgres ${why})`);
  }
}
