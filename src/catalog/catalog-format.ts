/**
 * The catalog document's format (README, "The model catalog"), checked with TypeBox. A mistake is
 * reported as one line naming the entry and the field and saying what to write there, e.g.
 * `SWITCHYARD_CATALOG: models[3].owned_by is missing: write the lab that built the model, e.g. "owned_by": "meta"`.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import {
  CONTEXT_WINDOW_MAX, CREATED_MAX, DIMENSIONS_MAX, isOwnedBy, MODEL_ID_MAX, MODEL_ID_PATTERN, OWNED_BY_MAX, OWNED_BY_RULE,
  PRICE_CAP_RULE, priceWithinCap,
} from "./catalog-bounds";

const Decimal = Type.String({ pattern: "^\\d+(\\.\\d{1,9})?$" });

const EntrySchema = Type.Object(
  {
    id: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: MODEL_ID_MAX }),
    kind: Type.Union([Type.Literal("chat"), Type.Literal("speech"), Type.Literal("embedding")]),
    owned_by: Type.String({ minLength: 1, maxLength: OWNED_BY_MAX }),
    /** Unix seconds; default 0. */
    created: Type.Optional(Type.Integer({ minimum: 0, maximum: CREATED_MAX })),
    /** Required for chat and embedding models. */
    context_window: Type.Optional(Type.Integer({ minimum: 1, maximum: CONTEXT_WINDOW_MAX })),
    max_output_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 32768 })),
    dimensions: Type.Optional(Type.Integer({ minimum: 1, maximum: DIMENSIONS_MAX })),
    /** Default false. */
    turbo: Type.Optional(Type.Boolean()),
    /** Default ["text"]. */
    input_modalities: Type.Optional(Type.Array(Type.Union([Type.Literal("text"), Type.Literal("image")]))),
    pricing: Type.Object(
      {
        input_per_million: Type.Optional(Decimal),
        output_per_million: Type.Optional(Decimal),
        characters_per_million: Type.Optional(Decimal),
        /** Chat: input tokens the engine read from its prompt cache; absent, they cost the input price. */
        cached_input_per_million: Type.Optional(Decimal),
        /** Chat: input tokens the engine wrote to its prompt cache; absent, they cost the input price. */
        cache_write_per_million: Type.Optional(Decimal),
      },
      { additionalProperties: false },
    ),
    /** Set false in an override catalog to remove an embedded entry. */
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const CatalogSchema = Type.Object({ models: Type.Array(EntrySchema) });

/** Every price an entry may carry, as the admin API and the CLI write them. */
export const PRICE_FIELDS = Object.keys(EntrySchema.properties.pricing.properties) as (keyof CatalogEntryJson["pricing"])[];

export type CatalogEntryJson = Static<typeof EntrySchema>;

export class CatalogError extends Error {}

const PRICE_HINT = `write USD per million as a decimal string with at most 9 decimals, e.g. "0.20" (${PRICE_CAP_RULE})`;
const FIELDS = Object.keys(EntrySchema.properties).join(", ");

/** What to write in each field. */
const HINTS: Record<string, string> = {
  id: 'write the id clients send as "model": letters, digits and . - _ : / @ +, starting with a letter or digit, at most 256 characters, e.g. "id": "my-llama" or "id": "Qwen/Qwen3-8B"',
  kind: 'write "chat", "speech" or "embedding"',
  owned_by: `write the lab that built the model, e.g. "owned_by": "meta" (${OWNED_BY_RULE})`,
  created: `write the release date in Unix seconds, e.g. "created": 1735689600 (0 to ${CREATED_MAX})`,
  context_window: `write the model's context length in tokens (vLLM's --max-model-len), e.g. "context_window": 131072 (1 to ${CONTEXT_WINDOW_MAX})`,
  max_output_tokens: 'write the most tokens one answer may have, 1 to 32768, e.g. "max_output_tokens": 8192',
  dimensions: `write the embedding vector's length, e.g. "dimensions": 768 (1 to ${DIMENSIONS_MAX})`,
  turbo: 'write true (the model also serves "<id>-turbo" at 1.5x the price) or false',
  input_modalities: 'write ["text"] or ["text", "image"]',
  pricing: 'write USD per million tokens as strings, e.g. "pricing": { "input_per_million": "0.20", "output_per_million": "0.60", "cached_input_per_million": "0.05" }',
  input_per_million: PRICE_HINT,
  output_per_million: PRICE_HINT,
  characters_per_million: PRICE_HINT,
  cached_input_per_million: `${PRICE_HINT} (what a prompt token read from the engine's cache costs; leave it out to charge the input price)`,
  cache_write_per_million: `${PRICE_HINT} (what a prompt token written to the engine's cache costs; leave it out to charge the input price)`,
  enabled: "write true, or false to remove the model",
};

/** `/models/3/pricing/input_per_million` → `models[3].pricing.input_per_million`. */
function readablePath(path: string): string {
  return path.split("/").filter(Boolean).reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), "");
}

function describe(path: string, message: string, missing: boolean): string {
  const parts = path.split("/").filter(Boolean);
  const field = parts[parts.length - 1] ?? "";
  const where = readablePath(path) || "the document";
  if (parts.length === 0 || (parts.length === 1 && field === "models")) return `${where} must be { "models": [ ... ] }, a list of model entries`;
  if (/^\d+$/.test(field)) return `${where} must be an object with ${FIELDS}`;
  const hint = Object.hasOwn(HINTS, field) ? HINTS[field] : undefined;
  if (!hint) return `${where} is not a catalog field: an entry has ${FIELDS}`;
  // TypeBox's own words help for a wrong type ("expected string"), not for a pattern.
  const why = missing ? "is missing" : /match|union/i.test(message) || message === "" ? "is not valid" : `is not valid (${message.charAt(0).toLowerCase()}${message.slice(1)})`;
  return `${where} ${why}: ${hint}`;
}

/** Checks one entry; throws CatalogError("<field> <why>: <what to write>") naming the field as `pricing.input_per_million`. */
export function parseEntry(json: unknown): CatalogEntryJson {
  if (!Value.Check(EntrySchema, json)) {
    const errors = [...Value.Errors(EntrySchema, json)];
    const first = errors.find((e) => /required property/i.test(e.message)) ?? errors.find((e) => /unexpected property/i.test(e.message)) ?? errors[0];
    const missing = first !== undefined && /required property/i.test(first.message);
    throw new CatalogEntryError(readablePath(first?.path ?? "") || "body", describe(first?.path ?? "", first?.message ?? "", missing));
  }
  if (json.kind !== "speech" && json.context_window === undefined) throw new CatalogEntryError("context_window", describe("/context_window", "", true));
  const outOfBounds = boundsMistake(json);
  if (outOfBounds !== null) throw new CatalogEntryError(readablePath(outOfBounds), describe(outOfBounds, "", false));
  return json;
}

/**
 * The path of the first field past the bounds the schema cannot say (catalog-bounds.ts): an
 * `owned_by` with characters outside its rule, a price over the cap (every pricing field,
 * whatever its name). Null when there is none.
 */
function boundsMistake(e: CatalogEntryJson): string | null {
  if (!isOwnedBy(e.owned_by)) return "/owned_by";
  for (const [field, price] of Object.entries(e.pricing)) if (typeof price === "string" && !priceWithinCap(price)) return `/pricing/${field}`;
  return null;
}

/** A single entry's mistake: the field and the sentence. */
export class CatalogEntryError extends CatalogError {
  constructor(readonly field: string, message: string) {
    super(message);
  }
}

/** Checks a catalog document; throws CatalogError saying what to write where. */
export function parseCatalog(json: unknown, source: string): CatalogEntryJson[] {
  if (!Value.Check(CatalogSchema, json)) {
    const errors = [...Value.Errors(CatalogSchema, json)];
    // A missing field is the most useful first line; TypeBox also reports its parent's union errors.
    const first = errors.find((e) => /required property/i.test(e.message)) ?? errors.find((e) => /unexpected property/i.test(e.message)) ?? errors[0];
    const missing = first !== undefined && /required property/i.test(first.message);
    throw new CatalogError(`${source}: ${describe(first?.path ?? "", first?.message ?? "", missing)}`);
  }
  json.models.forEach((e, i) => {
    if (e.kind !== "speech" && e.context_window === undefined) {
      throw new CatalogError(`${source}: ${describe(`/models/${i}/context_window`, "", true)}`);
    }
    const outOfBounds = boundsMistake(e);
    if (outOfBounds !== null) throw new CatalogError(`${source}: ${describe(`/models/${i}${outOfBounds}`, "", false)}`);
  });
  return json.models;
}
