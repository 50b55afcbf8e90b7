/** The embedded SQLite store: every port of the data store over one database file (see data-store.ts). */
import type { Store } from "../database";
import type { DataStore } from "../data-store";
import { SqliteLedgerStore, type SqliteLedgerOptions } from "./ledger-store";
import { SqliteAccountRecords, SqliteKeyRecords } from "./accounts";
import { SqliteResponseRecords } from "./responses";
import { SqliteOutcomeRecords } from "./outcomes";
import { SqliteUsageRecords } from "./usage";
import { SqliteReports } from "./reports";
import { SqliteLiveConfigRecords } from "./live-config";
import { AccountLimiter } from "../../limits/limiter";

export interface SqliteDataStore extends DataStore {
  readonly engine: "sqlite";
  /** The connection every read and write goes through (tests read it directly). */
  readonly db: Store;
  readonly ledger: SqliteLedgerStore;
  readonly limiter: AccountLimiter;
  /** close() without waiting: SQLite writes what is queued synchronously. */
  closeNow(): void;
}

export function sqliteDataStore(db: Store, ledgerOptions: SqliteLedgerOptions = {}): SqliteDataStore {
  const ledger = new SqliteLedgerStore(db, ledgerOptions);
  const closeNow = () => {
    ledger.close();
    db.close();
  };
  return {
    engine: "sqlite",
    db,
    ledger,
    accounts: new SqliteAccountRecords(db),
    keys: new SqliteKeyRecords(db),
    responses: new SqliteResponseRecords(db),
    outcomes: new SqliteOutcomeRecords(db),
    usage: new SqliteUsageRecords(db),
    reports: new SqliteReports(db),
    limiter: new AccountLimiter(),
    liveConfig: new SqliteLiveConfigRecords(db),
    closeNow,
    async ping() {
      db.query("SELECT 1").get();
    },
    async close() {
      closeNow();
    },
  };
}
