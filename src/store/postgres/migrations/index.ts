/**
 * Ordered PostgreSQL migrations, the counterpart of src/store/migrations for SQLite. Append only:
 * a released migration is never edited (functions change through a later CREATE OR REPLACE).
 */
import { core } from "./001-core";
import { scaleOut } from "./002-scale-out";
import { ledgerFunctions } from "./003-ledger-functions";
import { limitFunctions } from "./004-limit-functions";
import { responseRetention } from "./005-response-retention";
import { keyControls } from "./006-key-controls";
import { requestLog } from "./007-request-log";
import { liveCatalog } from "./008-live-catalog";
import { instanceAliveLock } from "./009-instance-alive-lock";
import { cacheTokens } from "./010-cache-tokens";
import { leases } from "./011-leases";
import { limitLeases } from "./012-limit-leases";
import { setBasedShipping } from "./013-set-based-shipping";

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

export const PG_MIGRATIONS: PgMigration[] = [core, scaleOut, ledgerFunctions, limitFunctions, responseRetention, keyControls, requestLog, liveCatalog, instanceAliveLock, cacheTokens, leases, limitLeases, setBasedShipping];
