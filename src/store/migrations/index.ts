/**
 * Ordered schema migrations. Append only: a released migration is never edited.
 * Each feature owns one file; this list fixes their order.
 */
import { core } from "./001-core";
import { responses } from "./003-responses";
import { responseItems } from "./004-response-items";
import { requestOutcomes } from "./005-request-outcomes";
import { responseRetention } from "./006-response-retention";
import { liveCatalog } from "./007-live-catalog";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [core, responses, responseItems, requestOutcomes, responseRetention, liveCatalog];
