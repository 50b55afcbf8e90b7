/**
 * Everything a running server (or a CLI command) needs, built once from the config.
 * Routes and commands receive this object instead of reaching for globals, so tests can
 * build as many independent instances as they like.
 */
import { ConfigError, type Config } from "./config";
import { mkdirSync } from "node:fs";
import { openStore, type Store } from "./store/database";
import { SqliteLedgerStore, type SqliteLedgerOptions } from "./store/sqlite/ledger-store";
import { DataDirLocked, lockDataDir, LOCK_FILE, type DataDirLock } from "./store/sqlite/data-dir-lock";
import { Accounts } from "./accounts/accounts";
import { ApiKeys } from "./accounts/api-keys";
import { Ledger } from "./billing/ledger";
import { Catalog, type ModelEntry } from "./catalog/catalog";
import { AliasesError, ModelAliases } from "./catalog/aliases";
import { createRouteRegistry, type RouteRegistry } from "./upstream/registry";
import { Log } from "./log";
import { EngineRegistry } from "./engines/registry";
import { MetricsRegistry } from "./metrics/registry";
import { AccountLimiter } from "./limits/limiter";
import { AuthThrottle } from "./limits/auth-throttle";
import { RequestOutcomes } from "./generations/outcomes";
import { GenerationRecords } from "./generations/records";

export interface Services {
  config: Config;
  db: Store;
  accounts: Accounts;
  keys: ApiKeys;
  ledger: Ledger;
  catalog: Catalog;
  /** Client-side model ids mapped to public ids (SWITCHYARD_MODEL_ALIASES). */
  aliases: ModelAliases;
  routes: RouteRegistry;
  engines: EngineRegistry;
  metrics: MetricsRegistry;
  /** Per-account rate and concurrency limits (contract §8). */
  limits: AccountLimiter;
  /** Wrong admin tokens and dashboard sign-ins, per source address. */
  authThrottle: AuthThrottle;
  /** How each admitted request ended (status, timings), written off the request path. */
  outcomes: RequestOutcomes;
  /** Generation records: ledger charge + outcome, per account (GET /v1/generation, dashboard). */
  generations: GenerationRecords;
  log: Log;
  isLive(entry: ModelEntry): boolean;
  close(): void;
}

export interface ServiceOverrides {
  routes?: RouteRegistry;
  engines?: EngineRegistry;
  /** Group-commit settings of the ledger store (tests inject a failing fsync or a short lock wait). */
  ledger?: SqliteLedgerOptions;
}

/**
 * `serve`: the one server of this data directory — takes its exclusive lock, and never lets a lock
 * wait block the event loop. `cli`: an administration command beside a running server.
 */
export type ServicesMode = "serve" | "cli";

function openData(config: Config, mode: ServicesMode): { db: Store; lock: DataDirLock | null } {
  const cannotOpen = (e: unknown) =>
    new ConfigError("SWITCHYARD_DATA_DIR", `cannot open the database in ${config.dataDir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  let lock: DataDirLock | null = null;
  if (mode === "serve") {
    try {
      mkdirSync(config.dataDir, { recursive: true });
      lock = lockDataDir(config.dataDir);
    } catch (e) {
      if (e instanceof DataDirLocked) {
        throw new ConfigError("SWITCHYARD_DATA_DIR", `${config.dataDir} is already served by another Switchyard server (it holds ${LOCK_FILE}); stop it or choose another directory`);
      }
      throw cannotOpen(e);
    }
  }
  try {
    return { db: openStore(config.dataDir, mode === "serve" ? { busyTimeoutMs: 0 } : {}), lock };
  } catch (e) {
    lock?.release();
    throw cannotOpen(e);
  }
}

export function createServices(config: Config, overrides: ServiceOverrides = {}, mode: ServicesMode = "cli"): Services {
  const { db, lock } = openData(config, mode);
  try {
    return assemble(config, overrides, db, () => lock?.release());
  } catch (e) {
    // A bad catalog or routes file must not leave the data directory locked or open.
    db.close();
    lock?.release();
    throw e;
  }
}

function assemble(config: Config, overrides: ServiceOverrides, db: Store, unlock: () => void): Services {
  const log = new Log(config.logLevel);
  const ledgerStore = new SqliteLedgerStore(db, overrides.ledger);
  const routes = overrides.routes ?? createRouteRegistry(config, (msg) => s.log.error(msg));
  let aliases: ModelAliases;
  try {
    aliases = new ModelAliases(config.modelAliases, (msg) => s.log.error(msg));
  } catch (err) {
    if (err instanceof AliasesError) throw new ConfigError("SWITCHYARD_MODEL_ALIASES", err.message);
    throw err;
  }
  const engines = overrides.engines ?? new EngineRegistry();
  const outcomes = new RequestOutcomes(db, (msg) => s.log.warn(msg));
  const s: Services = {
    config,
    db,
    accounts: new Accounts(db),
    keys: new ApiKeys(db),
    ledger: new Ledger(ledgerStore, log),
    catalog: new Catalog(config.catalogPath),
    aliases,
    routes,
    engines,
    metrics: new MetricsRegistry(),
    limits: new AccountLimiter(),
    authThrottle: new AuthThrottle(),
    outcomes,
    generations: new GenerationRecords(db, outcomes),
    log,
    isLive: (entry) => (entry.kind === "chat" ? s.routes.hasRoute(entry.id) : s.engines.isLoaded(entry.id)),
    close() {
      s.outcomes.close();
      s.ledger.close();
      ledgerStore.close();
      db.close();
      unlock();
    },
  };
  return s;
}
