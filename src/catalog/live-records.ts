/**
 * Where the models, upstreams and routes written live (admin API, `switchyard catalog|routes`)
 * are kept: a port with one implementation per store (store/sqlite/live-config.ts,
 * store/postgres/live-config.ts). Each row is one entry's JSON document; `version` moves on every
 * write, whoever made it, so a server notices a change by reading one integer.
 */
export type LiveKind = "model" | "upstream" | "route";

export interface LiveRow {
  kind: LiveKind;
  id: string;
  /** The entry's JSON document (an upstream's holds its key: never returned by the API). */
  body: string;
  /** Unix seconds. */
  updatedAt: number;
}

export interface LiveConfigRecords {
  list(): Promise<LiveRow[]>;
  put(kind: LiveKind, id: string, body: string, at: number): Promise<void>;
  /** False when there was no such row. */
  remove(kind: LiveKind, id: string): Promise<boolean>;
  version(): Promise<number>;
}
