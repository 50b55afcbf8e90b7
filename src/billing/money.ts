/**
 * Money is an integer number of nano-USD ("units"): 1 USD = 1_000_000_000 units.
 * Balances fit comfortably in a double's exact integer range (up to ~9 million USD);
 * products of token counts and prices may not, so cost arithmetic runs in BigInt.
 * No floating point touches a money value anywhere in this module.
 */
export const UNITS_PER_USD = 1_000_000_000;

/**
 * The largest balance an account may hold: 9 million USD. Balances stay far inside the range of
 * exact integers, so every view of them formats exactly.
 */
export const MAX_BALANCE = 9_000_000 * UNITS_PER_USD;
const DECIMALS = 9;

/** Why a decimal could not be read as money; the caller names the field. */
export class MoneyFormatError extends Error {}

/**
 * Parses a USD decimal ("12.5", "-0.000123", "1e-6", or a JSON number) into units, exactly.
 * Rejects more than 9 decimal places rather than rounding.
 */
export function parseUsd(value: number | string): number {
  // A JSON number arrives as a double; its shortest round-trip text is the decimal the client wrote.
  const text = typeof value === "number" ? numberToText(value) : value.trim();
  const m = /^([+-])?(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text) ?? /^([+-])?()\.(\d+)(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) throw new MoneyFormatError("must be a decimal number of USD");
  const sign = m[1] === "-" ? -1n : 1n;
  let digits = (m[2] ?? "") + (m[3] ?? "");
  let scale = (m[3] ?? "").length - Number(m[4] ?? 0); // value = digits * 10^-scale
  digits = digits.replace(/^0+(?=\d)/, "");
  if (scale > DECIMALS) {
    const extra = digits.slice(digits.length - (scale - DECIMALS));
    if (scale - DECIMALS > digits.length || /[1-9]/.test(extra)) {
      if (/^0*$/.test(digits)) return 0;
      throw new MoneyFormatError("has more than 9 decimal places (the smallest unit is 0.000000001 USD)");
    }
    digits = digits.slice(0, digits.length - (scale - DECIMALS)) || "0";
    scale = DECIMALS;
  }
  const units = BigInt(digits || "0") * 10n ** BigInt(DECIMALS - scale) * sign;
  if (units > BigInt(Number.MAX_SAFE_INTEGER) || units < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new MoneyFormatError("is too large");
  }
  return Number(units);
}

function numberToText(n: number): string {
  if (!Number.isFinite(n)) throw new MoneyFormatError("must be a finite number");
  return String(n);
}

/** Units as an exact decimal string of USD: 12500000000 -> "12.5", 123000 -> "0.000123". */
export function formatUsd(units: number): string {
  if (!Number.isSafeInteger(units)) throw new RangeError(`money must be a safe integer, got ${units}`);
  const negative = units < 0;
  const abs = String(Math.abs(units)).padStart(DECIMALS + 1, "0");
  const whole = abs.slice(0, abs.length - DECIMALS);
  const frac = abs.slice(abs.length - DECIMALS).replace(/0+$/, "");
  return (negative ? "-" : "") + whole + (frac ? "." + frac : "");
}

declare const usdJsonBrand: unique symbol;

/**
 * A USD amount for a JSON body: serialises (JSON.stringify, Response.json) as a plain decimal
 * number, exactly as formatUsd writes it — `0.00000008`, never `8e-8`. It is opaque: no
 * arithmetic, no comparison; compute on units and convert last.
 */
export type UsdJson = { readonly [usdJsonBrand]: true };

const rawJson = (JSON as unknown as { rawJSON(text: string): object }).rawJSON;

/**
 * Units as a JSON number of USD, written as the exact decimal (JSON.rawJSON): a double would print
 * small amounts in exponent form (8e-8), which some clients and spreadsheets misread.
 */
export function usdNumber(units: number): UsdJson {
  return rawJson(formatUsd(units)) as UsdJson;
}

/** The decimal text of a UsdJson (for tables and logs, which do not go through JSON); null for anything else. */
export function usdJsonText(value: unknown): string | null {
  const json = JSON as unknown as { isRawJSON(v: unknown): boolean };
  return json.isRawJSON(value) ? (value as { rawJSON: string }).rawJSON : null;
}

/**
 * A USD amount read back from stored JSON (a plain number again once parsed), as a UsdJson;
 * anything that is not a money number is left as it is.
 */
export function usdFromJson(value: unknown): unknown {
  if (typeof value !== "number") return value;
  try {
    return usdNumber(parseUsd(value));
  } catch {
    return value;
  }
}

/** A price: units per one million of some billing unit (tokens, characters). */
export type PricePerMillion = number;

/** Exact multiplier as a fraction; turbo is 3/2. */
export interface Multiplier {
  num: number;
  den: number;
}
export const STANDARD: Multiplier = { num: 1, den: 1 };
export const PRIORITY: Multiplier = { num: 3, den: 2 };

export interface CostLine {
  quantity: number;
  pricePerMillion: PricePerMillion;
}

/**
 * Cost of several metered quantities under one multiplier, rounded up once to the unit.
 * Rounding up means the ledger never under-charges by a fraction; the rule is documented in docs/money.md.
 */
export function cost(lines: CostLine[], multiplier: Multiplier = STANDARD): number {
  let numerator = 0n;
  for (const l of lines) {
    if (!Number.isSafeInteger(l.quantity) || l.quantity < 0) throw new RangeError(`bad quantity ${l.quantity}`);
    numerator += BigInt(l.quantity) * BigInt(l.pricePerMillion);
  }
  numerator *= BigInt(multiplier.num);
  const denominator = 1_000_000n * BigInt(multiplier.den);
  const units = (numerator + denominator - 1n) / denominator;
  // Absurd metered quantities (an upstream reporting 1e14 tokens) saturate instead of producing
  // an inexact number; the ledger then caps any charge at what the account can pay.
  return units > MAX_UNITS ? Number.MAX_SAFE_INTEGER : Number(units);
}

const MAX_UNITS = BigInt(Number.MAX_SAFE_INTEGER);
