/**
 * The ranges of what a catalog entry may say (README, "The model catalog"), shared by the catalog
 * document's check (catalog-format.ts), the admin API and dashboard (live-admin.ts) and what an
 * upstream's model list may contribute (upstream/model-lists.ts). Every one of these values ends
 * up in the unauthenticated GET /v1/models, so each is short, printable and within a range a
 * client can hold in an ordinary integer.
 */
import { parseUsd } from "../billing/money";

/**
 * A model id: what clients send as `model`. Letters (either case), digits and `. - _ : / @ +`, so
 * an engine's own names (`Qwen/Qwen3-8B`, `llama3.2:3b`) can be public ids as they are.
 */
export const MODEL_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._:/@+\\-]*$";
export const MODEL_ID_MAX = 256;
const MODEL_ID = new RegExp(MODEL_ID_PATTERN);

/** Whether `id` may be a public model id (the rule above, at most MODEL_ID_MAX characters). */
export function isModelId(id: unknown): id is string {
  return typeof id === "string" && id.length <= MODEL_ID_MAX && MODEL_ID.test(id);
}

/**
 * `owned_by`, the lab's name: 1 to 64 characters of letters (any script), digits, spaces and
 * `. , - _ & ' ( ) / + : @ !`, not only spaces. No control, format or bidirectional characters,
 * no markup.
 */
export const OWNED_BY_MAX = 64;
const OWNED_BY_PATTERN = "^[\\p{L}\\p{M}\\p{N} .,\\-_&'()/+:@!]*[\\p{L}\\p{M}\\p{N}.,\\-_&'()/+:@!][\\p{L}\\p{M}\\p{N} .,\\-_&'()/+:@!]*$";
const OWNED_BY = new RegExp(OWNED_BY_PATTERN, "u");
export const OWNED_BY_RULE = "1 to 64 letters, digits, spaces and . , - _ & ' ( ) / + : @ !";

export function isOwnedBy(value: unknown): value is string {
  return typeof value === "string" && value.length <= OWNED_BY_MAX && OWNED_BY.test(value);
}

/** `created`: Unix seconds from 0 up to 2100-01-01. */
export const CREATED_MAX = 4_102_444_800;
/** `context_window`: tokens, 1 to 100 million (also the bound of SWITCHYARD_DEFAULT_CONTEXT_WINDOW). */
export const CONTEXT_WINDOW_MAX = 100_000_000;
/** `dimensions`: an embedding vector's length, 1 to 65,536. */
export const DIMENSIONS_MAX = 65_536;

/** A price is at most this many USD per million (tokens or characters): a typo guard, far above any real price. */
export const PRICE_MAX_USD = 10_000;
const PRICE_MAX_UNITS = parseUsd(PRICE_MAX_USD);
export const PRICE_CAP_RULE = `must be at most ${PRICE_MAX_USD} USD per million`;

/**
 * Whether a price (USD per million, as a decimal string or integer units) is within the cap.
 * Every price field of the catalog calls this, so a new one gets the same cap.
 */
export function priceWithinCap(price: string | number): boolean {
  let units: number;
  try {
    units = typeof price === "number" ? price : parseUsd(price);
  } catch {
    // More digits than money holds: far over the cap.
    return false;
  }
  return units >= 0 && units <= PRICE_MAX_UNITS;
}
