/**
 * Everything a running server (or a CLI command) needs, built once from the config.
 * Routes and commands receive this object instead of reaching for globals, so tests can
 * build as many independent instances as they like.
 */
import { ConfigError, type Config } from "./config";
import { openStore, type Store } from "./store/database";
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
}

export function createServices(config: Config, overrides: ServiceOverrides = {}): Services {
  let db: Store;
  try {
    db = openStore(config.dataDir);
  } catch (e) {
    throw new ConfigError("SWITCHYARD_DATA_DIR", `cannot open the database in ${config.dataDir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
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
    ledger: new Ledger(db),
    catalog: new Catalog(config.catalogPath),
    aliases,
    routes,
    engines,
    metrics: new MetricsRegistry(),
    limits: new AccountLimiter(),
    authThrottle: new AuthThrottle(),
    outcomes,
    generations: new GenerationRecords(db, outcomes),
    log: new Log(config.logLevel),
    isLive: (entry) => (entry.kind === "chat" ? s.routes.hasRoute(entry.id) : s.engines.isLoaded(entry.id)),
    close() {
      s.outcomes.close();
      s.ledger.flush();
      db.close();
    },
  };
  return s;
}
