/**
 * Ordered schema migrations. Append only: a released migration is never edited.
 * Each feature owns one file; this list fixes their order.
 */
import { core } from "./001-core";
import { responses } from "./003-responses";
import { responseItems } from "./004-response-items";
import { requestOutcomes } from "./005-request-outcomes";
import { responseRetention } from "./006-response-retention";
import { keyControls } from "./007-key-controls";
import { requestLog } from "./008-request-log";
import { liveCatalog } from "./009-live-catalog";
import { cacheTokens } from "./010-cache-tokens";
import { holdsInMemory } from "./011-holds-in-memory";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [core, responses, responseItems, requestOutcomes, responseRetention, keyControls, requestLog, liveCatalog, cacheTokens, holdsInMemory];
