/**
 * Everything a running server (or a CLI command) needs, built once from the config.
 * Routes and commands receive this object instead of reaching for globals, so tests can
 * build as many independent instances as they like.
 *
 * The store is the embedded SQLite database in SWITCHYARD_DATA_DIR, or PostgreSQL when
 * SWITCHYARD_DATABASE_URL is set (then every instance pointed at it shares accounts, keys, money
 * and limits: README, "Scaling out"). The rest of the services are the same either way.
 */
import { ConfigError, type Config } from "./config";
import { mkdirSync } from "node:fs";
import { openStore } from "./store/database";
import type { DataStore } from "./store/data-store";
import { sqliteDataStore } from "./store/sqlite/open";
import type { SqliteLedgerOptions } from "./store/sqlite/ledger-store";
import { DataDirLocked, lockDataDir, LOCK_FILE, type DataDirLock } from "./store/sqlite/data-dir-lock";
import { openPostgres, type PostgresDataStore } from "./store/postgres/open";
import { Accounts } from "./accounts/accounts";
import { ApiKeys } from "./accounts/api-keys";
import { Ledger } from "./billing/ledger";
import { Catalog, type ModelEntry } from "./catalog/catalog";
import { AliasesError, ModelAliases } from "./catalog/aliases";
import { createRouteRegistry, type RouteRegistry } from "./upstream/registry";
import { Log } from "./log";
import { EngineRegistry } from "./engines/registry";
import { MetricsRegistry } from "./metrics/registry";
import type { Limiter } from "./limits/limiter";
import { AuthThrottle } from "./limits/auth-throttle";
import { RequestOutcomes } from "./generations/outcomes";
import { GenerationRecords } from "./generations/records";
import { ResponseStore } from "./store/responses";
import { TokenCounter } from "./tokens/token-counter";
import { AccountBudget } from "./limits/account-budget";

export interface Services {
  config: Config;
  /** Where everything is kept: SQLite or PostgreSQL (store/data-store.ts). */
  store: DataStore;
  accounts: Accounts;
  keys: ApiKeys;
  ledger: Ledger;
  /** Stored Responses turns (POST /v1/responses with store, previous_response_id, GET/DELETE). */
  responses: ResponseStore;
  catalog: Catalog;
  /** Client-side model ids mapped to public ids (SWITCHYARD_MODEL_ALIASES). */
  aliases: ModelAliases;
  routes: RouteRegistry;
  engines: EngineRegistry;
  metrics: MetricsRegistry;
  /** Per-account rate and concurrency limits: in memory (SQLite), or shared in PostgreSQL. */
  limits: Limiter;
  /** Wrong admin tokens and dashboard sign-ins, per source address. */
  authThrottle: AuthThrottle;
  /** How each admitted request ended (status, timings), written off the request path. */
  outcomes: RequestOutcomes;
  /** Generation records: ledger charge + outcome, per account (GET /v1/generation, dashboard). */
  generations: GenerationRecords;
  /** Chat token counting, in worker threads (never on the event loop), the accounts taking turns. */
  tokens: TokenCounter;
  /** Bytes of text each account's count_tokens requests have in flight (SWITCHYARD_COUNT_TOKENS_BYTES). */
  countTokensBytes: AccountBudget;
  log: Log;
  isLive(entry: ModelEntry): boolean;
  /** Writes what is queued and closes the store (SQLite: done before it returns). */
  close(): Promise<void>;
}

export interface ServiceOverrides {
  routes?: RouteRegistry;
  engines?: EngineRegistry;
  /** Group-commit settings of the SQLite ledger store (tests inject a failing fsync or a short lock wait). */
  ledger?: SqliteLedgerOptions;
}

/**
 * `serve`: the one server of this data directory — takes its exclusive lock, and never lets a lock
 * wait block the event loop. `cli`: an administration command beside a running server.
 */
export type ServicesMode = "serve" | "cli";

function lockData(config: Config, mode: ServicesMode): DataDirLock | null {
  if (mode !== "serve") return null;
  try {
    mkdirSync(config.dataDir, { recursive: true });
    return lockDataDir(config.dataDir);
  } catch (e) {
    if (e instanceof DataDirLocked) {
      throw new ConfigError("SWITCHYARD_DATA_DIR", `${config.dataDir} is already served by another Switchyard server (it holds ${LOCK_FILE}); stop it or choose another directory`);
    }
    throw cannotOpen(config, e);
  }
}

const cannotOpen = (config: Config, e: unknown) =>
  new ConfigError("SWITCHYARD_DATA_DIR", `cannot open the database in ${config.dataDir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);

async function openData(config: Config, mode: ServicesMode, overrides: ServiceOverrides, late: LateHooks): Promise<DataStore> {
  if (config.databaseUrl) {
    return openPostgres(config, {
      // A key revoked, an account disabled or its limits changed anywhere: no cached owner survives it.
      onChange: () => late.services?.keys.forget(),
      onReleasedOther: (r) => late.services?.log.warn("released the holds and slots of an instance whose heartbeat expired", {
        instance: r.instanceId, holds: r.holdsVoided, slots: r.slotsReleased,
      }),
      onReregistered: () => late.services?.log.warn("this instance had been declared dead (no heartbeat within its timeout) and registered again; what it had in flight was released", {}),
      onBeatError: (e) => late.services?.log.warn("heartbeat failed; the database is unreachable", { error: String((e as Error)?.message ?? e).slice(0, 200) }),
    }, { mode });
  }
  try {
    const db = openStore(config.dataDir, mode === "serve" ? { busyTimeoutMs: 0 } : {});
    return sqliteDataStore(db, overrides.ledger);
  } catch (e) {
    throw cannotOpen(config, e);
  }
}

interface LateHooks {
  services: Services | null;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}, mode: ServicesMode = "cli"): Promise<Services> {
  const late: LateHooks = { services: null };
  // The configuration files first: a bad catalog or routes file stops here, before the data
  // directory is locked or the store opened.
  const parts = configured(config, overrides);
  const lock = lockData(config, mode);
  let store: DataStore | null = null;
  try {
    store = await openData(config, mode, overrides, late);
    late.services = assemble(config, parts, store, () => lock?.release());
    return late.services;
  } catch (e) {
    await store?.close().catch(() => {});
    lock?.release();
    throw e;
  }
}

interface Configured {
  log: Log;
  catalog: Catalog;
  aliases: ModelAliases;
  routes: RouteRegistry;
  engines: EngineRegistry;
}

function configured(config: Config, overrides: ServiceOverrides): Configured {
  const log = new Log(config.logLevel);
  const routes = overrides.routes ?? createRouteRegistry(config, (msg) => log.error(msg));
  let aliases: ModelAliases;
  try {
    aliases = new ModelAliases(config.modelAliases, (msg) => log.error(msg));
  } catch (err) {
    if (err instanceof AliasesError) throw new ConfigError("SWITCHYARD_MODEL_ALIASES", err.message);
    throw err;
  }
  return { log, catalog: new Catalog(config.catalogPath), aliases, routes, engines: overrides.engines ?? new EngineRegistry() };
}

function assemble(config: Config, parts: Configured, store: DataStore, unlock: () => void): Services {
  const { log, catalog, aliases, routes, engines } = parts;
  const outcomes = new RequestOutcomes(store.outcomes, (msg) => s.log.warn(msg));
  const s: Services = {
    config,
    store,
    accounts: new Accounts(store.accounts),
    keys: new ApiKeys(store.keys),
    ledger: new Ledger(store.ledger, log),
    responses: new ResponseStore(store.responses),
    catalog,
    aliases,
    routes,
    engines,
    metrics: new MetricsRegistry(),
    limits: store.limiter,
    authThrottle: new AuthThrottle(),
    tokens: new TokenCounter((msg) => s.log.warn(msg), { maxQueuedChars: config.tokenQueueChars }),
    countTokensBytes: new AccountBudget(config.countTokensBytes),
    outcomes,
    generations: new GenerationRecords(store.usage, outcomes),
    log,
    isLive: (entry) => (entry.kind === "chat" ? s.routes.hasRoute(entry.id) : s.engines.isLoaded(entry.id)),
    async close() {
      s.tokens.close();
      await s.outcomes.close();
      s.ledger.close();
      await store.close();
      unlock();
    },
  };
  if (store.engine === "postgres") {
    const db = (store as PostgresDataStore).db;
    s.metrics.gauge("switchyard_database_statements", "Statements (round trips) this instance has sent to PostgreSQL since it started.", () => db.statements);
  }
  return s;
}
