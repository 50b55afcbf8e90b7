/**
 * Opens the PostgreSQL store, in start-up order: the pool, the migrations (advisory-locked, so N
 * instances starting together migrate once), and — for a server — this instance's registration,
 * the release of whatever its previous run left behind, heartbeats with survivor passes, and the
 * change feed. close() undoes it in reverse, releasing this run so nobody waits for its timeout.
 * A CLI command opens the pool and migrates only: it takes no holds or slots.
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
import { StoreUnavailable } from "../../billing/ledger-store";
import type { DataStore } from "../data-store";
import { OutcomeUnknown, PgDatabase } from "./database";
import { migratePostgres } from "./migrate";
import { InstanceRegistry, type InstanceIdentity, type Released } from "./instances";
import { PostgresLedgerStore } from "./ledger-store";
import { PostgresLimiter } from "./limiter";
import { listenForChanges, listenForRecalls, type Change, type ChangeFeed } from "./changes";
import { ChargeJournal } from "./charge-journal";
import { PgAccountRecords, PgKeyRecords } from "./accounts";
import { PgResponseRecords } from "./responses";
import { PgOutcomeRecords } from "./outcomes";
import { PgUsageRecords } from "./usage";
import { PgReports } from "./reports";
import { PgLiveConfigRecords } from "./live-config";

export interface PostgresDataStore extends DataStore {
  readonly engine: "postgres";
  readonly db: PgDatabase;
  readonly ledger: PostgresLedgerStore;
  readonly limiter: PostgresLimiter;
  /** Null for a CLI command (it is no instance). */
  readonly registry: InstanceRegistry | null;
  /** Holds and slots of this instance's previous run, released at start. */
  readonly releasedAtStart: { holdsVoided: number; slotsReleased: number };
}

export interface OpenHooks {
  /** A key, an account's disabled flag or limits changed somewhere ("*": anything may have). */
  onChange(c: Change): void;
  onReleasedOther?(r: Released): void;
  onReregistered?(oldId: string, newId: string): void;
  onBeatError?(e: unknown): void;
  /** A clean stop found `pending` charges its journal could not ship: its leases were kept for them. */
  onStoppedUnshipped?(pending: number): void;
  /** The database went silent (true: requests are refused at once) or answers again (false). */
  onDown?(down: boolean): void;
}

export interface OpenOptions {
  /** `serve`: an instance (registers, heartbeats, listens); `cli`: a command beside the instances. */
  mode?: "serve" | "cli";
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

/** A CLI command credits, creates and revokes, but never holds: it needs no registered instance. */
const CLI_IDENTITY: InstanceIdentity = { id: "cli", name: "cli" };

/** How long a readiness ping waits for PostgreSQL. */
const PING_TIMEOUT_MS = 2_000;

export async function openPostgres(config: Config, hooks: OpenHooks, options: OpenOptions = {}): Promise<PostgresDataStore> {
  if (!config.databaseUrl) throw new Error("openPostgres without SWITCHYARD_DATABASE_URL");
  const serve = (options.mode ?? "serve") === "serve";
  const db = new PgDatabase({
    url: config.databaseUrl, pool: serve ? config.databasePool : 2, applicationName: serve ? "switchyard" : "switchyard-cli",
    stallMs: config.databaseStallMs, onDown: (down) => hooks.onDown?.(down),
  });
  let changes: ChangeFeed | null = null;
  let recalls: ChangeFeed | null = null;
  let registry: InstanceRegistry | null = null;
  let ledger: PostgresLedgerStore | null = null;
  let limiter: PostgresLimiter | null = null;
  try {
    await migratePostgres(db.sql);
    let releasedAtStart = { holdsVoided: 0, slotsReleased: 0 };
    if (serve) {
      registry = new InstanceRegistry(db, {
        name: instanceName(config.dataDir),
        timeoutMs: config.instanceTimeoutMs,
        onReleasedOther: hooks.onReleasedOther,
        onReregistered: (oldId, newId) => {
          // Released by a survivor: its leases went back to their accounts.
          ledger?.released();
          limiter?.released();
          hooks.onReregistered?.(oldId, newId);
        },
        onError: (e) => {
          // The database refused the connection itself: new holds are refused at once (503),
          // not after each request has found out. A slow answer is no such proof.
          if (e instanceof StoreUnavailable && !(e instanceof OutcomeUnknown) && e.reason === "unreachable") ledger?.reportFailure(e);
          hooks.onBeatError?.(e);
        },
      });
      await registry.register();
    }
    const identity = registry ?? CLI_IDENTITY;
    const ledgerStore = (ledger = new PostgresLedgerStore(db, identity, {
      recallMs: config.leaseRecallMs,
      // Charges taken from this instance's leases: durable on its own disk, shipped in batches.
      journal: serve
        ? (ship, shipped) => new ChargeJournal(config.dataDir, { ship, shipped, shipMs: config.chargeShipMs, onError: (e) => hooks.onBeatError?.(e) })
        : undefined,
    }));
    const limits = (limiter = new PostgresLimiter(db, identity, { recallMs: config.leaseRecallMs }));
    if (registry) {
      // What the previous run charged and had not shipped goes first, against its own leases;
      // then what it left (holds, slots, leases) is released.
      // Not shipped in time (the database answers but too slowly): nothing of the previous run is
      // released here; the server's start-up tries once more (releaseAbandoned) and refuses to
      // start if the journal still cannot ship.
      if ((await ledgerStore.journal?.drain(config.instanceTimeoutMs)) !== false) releasedAtStart = await registry.releasePrevious();
      registry.start();
      ledgerStore.startLeases();
      limits.start();
      changes = await listenForChanges(db, (c) => {
        if (c.table === "api_keys" || c.table === "*") ledgerStore.keysChanged();
        // An account disabled (or its limits changed): what this instance leases of it and does not use goes back.
        if (c.table === "accounts" && c.id) void ledgerStore.recalled(`credit:${c.id}`);
        hooks.onChange(c);
      });
      recalls = await listenForRecalls(db, (subject) => {
        void ledgerStore.recalled(subject);
        void limits.recalled(subject);
      });
    }
    const reg = registry;
    const feed = changes;
    const recallFeed = recalls;
    return {
      engine: "postgres",
      db,
      registry: reg,
      ledger: ledgerStore,
      limiter: limits,
      releasedAtStart,
      accounts: new PgAccountRecords(db),
      keys: new PgKeyRecords(db),
      responses: new PgResponseRecords(db),
      outcomes: new PgOutcomeRecords(db),
      usage: new PgUsageRecords(db),
      reports: new PgReports(db),
      liveConfig: new PgLiveConfigRecords(db),
      async ping() {
        await db.run((sql) => sql`SELECT 1`, PING_TIMEOUT_MS);
      },
      async close() {
        await feed?.close().catch(() => {});
        await recallFeed?.close().catch(() => {});
        // Charges shipped, then leases given back, then the instance released. A journal that
        // could not ship keeps this run's leases and row: the next start ships it first, then
        // releases them (or a survivor does, after the timeout, as for a crash).
        const shipped = await ledgerStore.flush().catch(() => false);
        await limits.flush().catch(() => {});
        if (shipped) await reg?.stop().catch(() => {});
        else {
          reg?.halt();
          hooks.onStoppedUnshipped?.(ledgerStore.journal?.pending ?? 0);
        }
        ledgerStore.closeJournal();
        await db.close().catch(() => {});
      },
    };
  } catch (e) {
    registry?.halt();
    ledger?.closeJournal();
    await changes?.close().catch(() => {});
    await recalls?.close().catch(() => {});
    await db.close().catch(() => {});
    const why = (e as { errno?: string }).errno ?? (e as { code?: string }).code ?? (e as Error).constructor?.name ?? "error";
    // Never the URL itself: it holds a password.
    throw new ConfigError("SWITCHYARD_DATABASE_URL", `cannot open the PostgreSQL database (postgres ${why})`);
  }
}
