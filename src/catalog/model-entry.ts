/**
 * What a catalog entry is once read, shared by the catalog and by the entries it discovers from
 * upstreams (discovered.ts): a leaf module, so neither imports the other for it.
 */
import type { CatalogEntryJson } from "./catalog-format";

export type ModelKind = CatalogEntryJson["kind"];

/** A catalog entry with prices converted to integer units per million. */
export interface ModelEntry {
  id: string;
  kind: ModelKind;
  ownedBy: string;
  created: number;
  contextWindow: number;
  maxOutputTokens: number;
  dimensions: number | null;
  turbo: boolean;
  inputModalities: ("text" | "image")[];
  /**
   * Units per million. A cache read or write price left out of the catalog is absent here, and the
   * token costs the input price (billing/prices.ts).
   */
  prices: { inputPerMillion: number; outputPerMillion: number; charactersPerMillion: number; cachedInputPerMillion?: number; cacheWritePerMillion?: number };
  pricingJson: CatalogEntryJson["pricing"];
  /** Offered by an upstream and priced by SWITCHYARD_DEFAULT_PRICE, not written in a catalog. */
  discovered?: boolean;
}

/** The endpoint a model kind belongs to, as named in wrong-endpoint errors. */
export const ENDPOINT_OF_KIND: Record<ModelKind, string> = {
  chat: "POST /v1/chat/completions",
  speech: "POST /v1/audio/speech",
  embedding: "POST /v1/embeddings",
};

export const OUTPUT_CEILING = 32768;
export const TURBO_SUFFIX = "-turbo";
