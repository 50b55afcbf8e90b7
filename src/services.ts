/**
 * Everything a running server (or a CLI command) needs, built once from the config: the
 * composition root. Nothing else takes all of it: each route, engine and domain module declares
 * the few members it uses (an interface of its own: ChatPipelineDeps, ReadinessDeps, ...) and is
 * handed this object seen through that interface; only the server, the CLI and tests hold
 * `Services` itself. No globals, so tests can build as many independent instances as they like.
 *
 * The store is the embedded SQLite database in SWITCHYARD_DATA_DIR, or PostgreSQL when
 * SWITCHYARD_DATABASE_URL is set (then every instance pointed at it shares accounts, keys, money
 * and limits: docs/scale-out.md). The rest of the services are the same either way.
 */
import { ConfigError, type Config } from "./config";
import { mkdirSync } from "node:fs";
import { openStore } from "./store/database";
import type { DataStore } from "./store/data-store";
import { sqliteDataStore, type SqliteDataStore } from "./store/sqlite/open";
import type { StoreUnavailable } from "./billing/ledger-store";
import type { SqliteLedgerOptions } from "./store/sqlite/ledger-store";
import { DataDirLocked, lockDataDir, LOCK_FILE, servedNow, type DataDirLock } from "./store/sqlite/data-dir-lock";
import { openPostgres, type PostgresDataStore } from "./store/postgres/open";
import { Accounts } from "./accounts/accounts";
import { ApiKeys } from "./accounts/api-keys";
import { Ledger } from "./billing/ledger";
import { liveAccounts, liveKeys, liveUsage } from "./billing/live-reserved";
import { leasedFigures } from "./store/postgres/credit-leases";
import { Catalog, type ModelEntry } from "./catalog/catalog";
import { AliasesError, ModelAliases } from "./catalog/aliases";
import { LiveConfig } from "./catalog/live-config";
import { createRouteRegistry, type RouteRegistry } from "./upstream/registry";
import { createPool } from "./upstream/http1/client";
import { fetchModelList, ModelListRefresh, UpstreamModelLists } from "./upstream/model-lists";
import { modelSeriesCap } from "./metrics/model-series";
import type { ConnectionPool } from "./upstream/http1/pool";
import { Log } from "./log";
import { EngineRegistry } from "./engines/registry";
import { MetricsRegistry } from "./metrics/registry";
import type { Limiter } from "./limits/limiter";
import { AuthThrottle } from "./limits/auth-throttle";
import { Drain } from "./limits/drain";
import { RequestOutcomes } from "./generations/outcomes";
import { GenerationRecords } from "./generations/records";
import { ResponseStore } from "./store/responses";
import { TokenCounter } from "./tokens/token-counter";
import { AccountBudget } from "./limits/account-budget";
import { RefusalPacer, type RefusalPacerOptions } from "./limits/refusal-pacer";
import { DecodeQueue } from "./images/decode-queue";
import { RemoteMediaFetcher, type Lookup } from "./media/fetch";
import { decideProvider, type ProviderDecision } from "./runtime/provider";

export interface Services {
  config: Config;
  /** Where everything is kept: SQLite or PostgreSQL (store/data-store.ts). */
  store: DataStore;
  accounts: Accounts;
  keys: ApiKeys;
  ledger: Ledger;
  /** Usage sums, credits and balances, with `reserved` as it is now (billing/live-reserved.ts). */
  usage: DataStore["usage"];
  /** Stored Responses turns (POST /v1/responses with store, previous_response_id, GET/DELETE). */
  responses: ResponseStore;
  catalog: Catalog;
  /** Client-side model ids mapped to public ids (SWITCHYARD_MODEL_ALIASES). */
  aliases: ModelAliases;
  routes: RouteRegistry;
  /** Models, upstreams and routes written live (admin API, CLI), laid over the catalog and the routes. */
  liveConfig: LiveConfig;
  /** Each upstream's GET /v1/models, read at start and every SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS. */
  upstreamModels: ModelListRefresh;
  /** Keep-alive connections to the upstreams, per origin and account. */
  upstreamPool: ConnectionPool;
  engines: EngineRegistry;
  metrics: MetricsRegistry;
  /** Per-account rate and concurrency limits: in memory (SQLite), or shared in PostgreSQL. */
  limits: Limiter;
  /** Wrong admin tokens and dashboard sign-ins, per source address. */
  authThrottle: AuthThrottle;
  /** Requests in flight and whether the server is stopping (graceful stop, GET /readyz). */
  drain: Drain;
  /** How each admitted request ended (status, timings), written off the request path. */
  outcomes: RequestOutcomes;
  /** Generation records: ledger charge + outcome, per account (GET /v1/generation, dashboard). */
  generations: GenerationRecords;
  /** Chat token counting, in worker threads (never on the event loop), the accounts taking turns. */
  tokens: TokenCounter;
  /** Image decodes: a fair queue between accounts, and each account's decode-time budget. */
  imageDecoder: DecodeQueue;
  /** Remote media URLs fetched by the gateway itself, with the SSRF guard (media/fetch.ts). */
  mediaFetcher: RemoteMediaFetcher;
  /** Bytes of text each account's count_tokens requests have in flight (SWITCHYARD_COUNT_TOKENS_BYTES). */
  countTokensBytes: AccountBudget;
  /** Holds an account's repeated refusals of large uploads for their Retry-After (see limits/refusal-pacer.ts). */
  refusalPacer: RefusalPacer;
  log: Log;
  /** The execution provider of the local models, decided on first use (README, "Running on a GPU"). */
  onnxProvider(): ProviderDecision;
  isLive(entry: ModelEntry): boolean;
  /** Writes what is queued and closes the store (SQLite: done before it returns). */
  close(): Promise<void>;
}

export interface ServiceOverrides {
  routes?: RouteRegistry;
  engines?: EngineRegistry;
  /** Group-commit settings of the SQLite ledger store (tests inject a failing fsync or a short lock wait). */
  ledger?: SqliteLedgerOptions;
  /** The media fetcher's host-name resolver (tests resolve their own names; the policy is unchanged). */
  mediaLookup?: Lookup;
  /** The stored-responses clock in milliseconds (tests move it to expire turns). */
  clock?: () => number;
  /**
   * What happens after the SQLite ledger's fsync failed, once the line is logged: the process
   * exits (status 1). Tests, whose runner is the process, replace it.
   */
  stopAfterStoreFailure?: (e: StoreUnavailable) => void;
  /** How refused large uploads are paced (tests hold them for longer than they run). */
  refusalPacing?: RefusalPacerOptions;
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
      onChange: (c) => {
        late.services?.keys.forget();
        // Models, prices or routes written by another instance or the CLI.
        if (c.table === "live_config" || c.table === "*") void late.services?.liveConfig.reload().catch((e) => late.services?.log.warn("cannot read the live catalog from the store; the last one keeps serving", { error: String((e as Error)?.message ?? e).slice(0, 200) }));
      },
      onReleasedOther: (r) => late.services?.log.warn("released the holds and slots of an instance whose heartbeat expired", {
        instance: r.instanceId, holds: r.holdsVoided, slots: r.slotsReleased,
      }),
      onReregistered: () => late.services?.log.warn("this instance had been declared dead (no heartbeat within its timeout) and registered again; what it had in flight was released", {}),
      onBeatError: (e) => late.services?.log.warn("heartbeat failed; the database is unreachable", { error: String((e as Error)?.message ?? e).slice(0, 200) }),
      onStoppedUnshipped: (pending) => late.services?.log.error("stopping with charges the database did not take: this run's leases stay set aside for them, and the next start on this data directory ships them first", { charges: pending }),
      onDown: (down) => down
        ? late.services?.log.error("PostgreSQL stopped answering; requests are refused with 503 until it answers again", {})
        : late.services?.log.warn("PostgreSQL answers again; requests are accepted", {}),
    }, { mode });
  }
  try {
    const db = openStore(config.dataDir, mode === "serve" ? { busyTimeoutMs: 0 } : {});
    // The CLI beside a running server may add credits but not deduct them (data-dir-lock.ts).
    return sqliteDataStore(db, { ...overrides.ledger, besideServer: mode === "cli" && servedNow(config.dataDir) });
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
  const parts = await configured(config, overrides);
  const lock = lockData(config, mode);
  let store: DataStore | null = null;
  try {
    store = await openData(config, mode, overrides, late);
    late.services = assemble(config, parts, store, () => lock?.release(), overrides.clock);
    await late.services.liveConfig.reload();
    if (mode === "serve") late.services.liveConfig.start(config.liveConfigPollSeconds * 1000);
    if (store.engine === "sqlite") stopOnFatal(store as SqliteDataStore, parts.log, overrides.stopAfterStoreFailure);
    return late.services;
  } catch (e) {
    await store?.close().catch(() => {});
    lock?.release();
    throw e;
  }
}

/**
 * A failed fsync of the ledger (or an I/O error on commit) is final, as in PostgreSQL: charges
 * acknowledged or not cannot be vouched for on this connection, so the process stops with one
 * line; a restart reads the database from what is on disk (store/sqlite/group-commit.ts).
 */
function stopOnFatal(store: SqliteDataStore, log: Log, stop: ((e: StoreUnavailable) => void) | undefined): void {
  store.ledger.onFatal((e) => {
    log.error("the ledger's database could not be synced to disk; stopping so that nothing unsynced is acknowledged (restart to recover from what is on disk)", {
      reason: e.reason, detail: e.message.slice(0, 300),
    });
    if (stop) stop(e);
    else process.exit(1);
  });
}

interface Configured {
  log: Log;
  catalog: Catalog;
  aliases: ModelAliases;
  routes: RouteRegistry;
  upstreamModels: ModelListRefresh;
  engines: EngineRegistry;
  mediaFetcher: RemoteMediaFetcher;
  refusalPacer: RefusalPacer;
}

async function configured(config: Config, overrides: ServiceOverrides): Promise<Configured> {
  const log = new Log(config.logLevel);
  const lists = new UpstreamModelLists(
    (u) => fetchModelList(u, undefined, config.upstreamModelsMax),
    (upstream, error) => log.warn("cannot read an upstream's model list (GET /v1/models); its last list stays in use, and until a first one its routes are all served", { upstream, error }),
    (upstream, dropped) => log.warn("an upstream's model list holds ids that are not offered: ids outside the public id rule are never discovered, and ids past SWITCHYARD_UPSTREAM_MODELS_MAX are not read", {
      upstream, invalid_ids: dropped.invalid, ids_past_cap: dropped.overCap, ids_kept: dropped.kept,
    }));
  const routes = overrides.routes ?? (await createRouteRegistry(config, (msg) => log.error(msg), lists));
  const offered = routes.offered && routes.offeredVersion ? { version: () => routes.offeredVersion!(), models: () => routes.offered!() } : null;
  const upstreamModels = new ModelListRefresh(lists, () => routes.upstreams?.() ?? [], config.upstreamModelsRefreshSeconds * 1000, () => reportOffered());
  let aliases: ModelAliases;
  try {
    aliases = await ModelAliases.open(config.modelAliases, (msg) => log.error(msg));
  } catch (err) {
    if (err instanceof AliasesError) throw new ConfigError("SWITCHYARD_MODEL_ALIASES", err.message);
    throw err;
  }
  const catalog = await Catalog.open(config.catalogPath, offered, { defaultPrice: config.defaultPrice, defaultContextWindow: config.defaultContextWindow });
  // Once per change: served models the catalog cannot price, and priced ones with an assumed context window.
  let reported = "";
  const reportOffered = () => {
    if (!offered) return;
    const models = offered.models();
    const unpriced = models.filter((m) => !catalog.get(m.id)).map((m) => m.id);
    const assumed = models.filter((m) => catalog.get(m.id)?.discovered && m.maxModelLen === null).map((m) => m.id);
    const now = JSON.stringify([unpriced, assumed]);
    if (now === reported) return;
    reported = now;
    if (unpriced.length > 0) {
      log.warn("upstreams serve models the catalog lacks; they are not offered until priced: set SWITCHYARD_DEFAULT_PRICE (e.g. 0.2,0.6) or add them to SWITCHYARD_CATALOG", { models: unpriced.slice(0, 50) });
    }
    if (assumed.length > 0) {
      log.info("upstream models offered at the default price without a reported context window; assuming SWITCHYARD_DEFAULT_CONTEXT_WINDOW", { models: assumed.slice(0, 50), context_window: config.defaultContextWindow });
    }
  };
  return { log, catalog, aliases, routes, upstreamModels, engines: overrides.engines ?? new EngineRegistry(),
    mediaFetcher: new RemoteMediaFetcher({ allow: config.remoteMediaAllow, timeoutMs: config.remoteMediaTimeoutMs, lookup: overrides.mediaLookup }),
    refusalPacer: new RefusalPacer(overrides.refusalPacing),
  };
}

function assemble(config: Config, parts: Configured, store: DataStore, unlock: () => void, clock?: () => number): Services {
  const { log, catalog, aliases, routes, engines, upstreamModels } = parts;
  const outcomes = new RequestOutcomes(store.outcomes, (msg) => s.log.warn(msg));
  let provider: ProviderDecision | undefined;
  const ledger = new Ledger(store.ledger, log, { holdExpirySeconds: config.holdExpirySeconds });
  const held = store.engine === "postgres" ? leasedFigures(ledger, (store as PostgresDataStore).ledger.leases) : ledger;
  const usage = liveUsage(store.usage, held);
  const s: Services = {
    config,
    store,
    accounts: new Accounts(liveAccounts(store.accounts, held)),
    keys: new ApiKeys(liveKeys(store.keys, held)),
    ledger,
    usage,
    responses: new ResponseStore(store.responses, { retentionSeconds: config.responsesRetentionSeconds, now: clock }),
    catalog,
    aliases,
    routes,
    liveConfig: new LiveConfig(store.liveConfig, catalog, routes, { keepAlive: config.upstreamKeepAlive, proxies: config.proxies }, (msg, fields) => s.log.warn(msg, fields)),
    upstreamModels,
    upstreamPool: createPool({ maxIdlePerOrigin: config.upstreamMaxIdlePerOrigin, maxIdle: config.upstreamMaxIdle, receiveBufferBytes: config.upstreamReceiveBufferKib * 1024 }),
    engines,
    metrics: new MetricsRegistry(modelSeriesCap(config, catalog)),
    limits: store.limiter,
    authThrottle: new AuthThrottle(),
    drain: new Drain(),
    tokens: new TokenCounter((msg) => s.log.warn(msg), { maxQueuedChars: config.tokenQueueChars, backgroundPercent: config.tokenBackgroundPercent }),
    countTokensBytes: new AccountBudget(config.countTokensBytes),
    refusalPacer: parts.refusalPacer,
    imageDecoder: new DecodeQueue(config.imageDecodeConcurrency, config.imageDecodeMsPerMinute),
    mediaFetcher: parts.mediaFetcher,
    outcomes,
    generations: new GenerationRecords(usage, outcomes),
    log,
    onnxProvider: () => (provider ??= decideProvider(config.onnxProvider, { runtimeDir: config.runtimeDir })),
    isLive: (entry) => (entry.kind === "chat" ? s.routes.hasRoute(entry.id) : s.engines.isLoaded(entry.id)),
    async close() {
      s.upstreamModels.stop();
      s.liveConfig.stop();
      s.upstreamPool.closeAll();
      s.responses.stopSweeping();
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
