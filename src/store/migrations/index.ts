/**
 * Ordered schema migrations. Append only: a released migration is never edited.
 * Each feature owns one file; this list fixes their order.
 */
import { core } from "./001-core";

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [core];
