/**
 * The expected charge of a request, computed independently of src/billing from the catalog's
 * decimal prices, so a test compares the gateway's arithmetic with a second implementation.
 * 1 USD = 1e9 units; cost = ceil((uncached*pIn + cached*pCached + written*pWrite + out*pOut) * multiplier / 1e6), in integers.
 */
import catalog from "../../src/catalog/catalog.json" with { type: "json" };

const UNITS = 1_000_000_000n;

/** "0.60" → 600000000n units. */
export function usdToUnits(decimal: string): bigint {
  const [whole = "0", frac = ""] = decimal.split(".");
  return BigInt(whole) * UNITS + BigInt((frac + "000000000").slice(0, 9));
}

type Pricing = { input_per_million?: string; output_per_million?: string; cached_input_per_million?: string; cache_write_per_million?: string };

/** A model's prices in units; a cache read or write price left out of the catalog is the input price. */
export function pricesOf(modelId: string): { pIn: bigint; pOut: bigint; pCached: bigint; pWrite: bigint } {
  const m = (catalog.models as { id: string; pricing: Pricing }[]).find((e) => e.id === modelId);
  if (!m) throw new Error(`no catalog entry ${modelId}`);
  const pIn = usdToUnits(m.pricing.input_per_million ?? "0");
  return {
    pIn,
    pOut: usdToUnits(m.pricing.output_per_million ?? "0"),
    pCached: m.pricing.cached_input_per_million === undefined ? pIn : usdToUnits(m.pricing.cached_input_per_million),
    pWrite: m.pricing.cache_write_per_million === undefined ? pIn : usdToUnits(m.pricing.cache_write_per_million),
  };
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

/**
 * Integer units charged for `input`/`output` tokens, of which `cache.cached` input tokens were read
 * from the engine's prompt cache and `cache.written` written to it; turbo multiplies by exactly 3/2
 * before rounding up.
 */
export function expectedChatCost(modelId: string, input: number, output: number, turbo = false, cache: { cached?: number; written?: number } = {}): number {
  const { pIn, pOut, pCached, pWrite } = pricesOf(modelId);
  const cached = BigInt(cache.cached ?? 0);
  const written = BigInt(cache.written ?? 0);
  const raw = (BigInt(input) - cached - written) * pIn + cached * pCached + written * pWrite + BigInt(output) * pOut;
  return Number(turbo ? ceilDiv(raw * 3n, 2_000_000n) : ceilDiv(raw, 1_000_000n));
}

/** Units as the exact decimal USD string the API prints ("0.0000198"). */
export function unitsToUsd(units: number): string {
  const s = String(units).padStart(10, "0");
  const frac = s.slice(-9).replace(/0+$/, "");
  return s.slice(0, -9) + (frac ? "." + frac : "");
}
