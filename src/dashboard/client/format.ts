/** How figures are shown. Money arrives as exact USD numbers (at most 9 decimals) and stays exact. */

/**
 * Money as shown (docs/dashboard.md): amounts of a dollar or more to the cent (4.9999802 →
 * "$5.00", 1234.5 → "$1,234.50"); smaller ones to 6 significant digits, at least 2 decimals
 * and at most 9, trailing zeros dropped (0.0000198 → "$0.0000198", 0.123456789 → "$0.123457",
 * 0.5 → "$0.50", 0.00000008 → "$0.00000008"). No Intl: the same text in every locale.
 */
export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const abs = Math.abs(n);
  let text: string;
  if (abs === 0) text = "0.00";
  else if (abs >= 1) text = abs.toFixed(2);
  else {
    const decimals = Math.min(9, Math.max(2, 5 - Math.floor(Math.log10(abs))));
    text = abs.toFixed(decimals).replace(/0+$/, "");
    const [, frac = ""] = text.split(".");
    if (frac.length < 2) text = abs.toFixed(2);
  }
  const [whole = "0", frac = ""] = text.split(".");
  const sign = n < 0 && Number(text) !== 0 ? "−" : "";
  return `${sign}$${group(whole)}.${frac}`;
}

/** "1234567" → "1,234,567". */
function group(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : n.toLocaleString("en-US");
}

export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  return n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${Math.round(n)} ms`;
}

/** "2026-11-23T16:24:10.012Z" or epoch seconds → "2026-11-23 16:24:10" (UTC). */
export function when(t: string | number | null | undefined): string {
  if (t === null || t === undefined) return "—";
  const d = typeof t === "number" ? new Date(t * 1000) : new Date(t);
  return d.toISOString().slice(0, 19).replace("T", " ");
}

/** Tokens in/out with what of the input the prompt cache read and wrote, or characters for speech. */
export function amounts(r: { tokens_prompt?: number; tokens_completion?: number; characters?: number; tokens_cached?: number; tokens_cache_write?: number }): string {
  if (r.characters) return `${count(r.characters)} chars`;
  const cache = [r.tokens_cached ? `${count(r.tokens_cached)} cached` : "", r.tokens_cache_write ? `${count(r.tokens_cache_write)} written` : ""].filter(Boolean);
  return `${count(r.tokens_prompt ?? 0)} in${cache.length ? ` (${cache.join(", ")})` : ""} / ${count(r.tokens_completion ?? 0)} out`;
}

/** A short axis label for a USD amount (the chart's title says USD): "0", "0.00002", "1.5". */
export function usdTick(v: number): string {
  if (v === 0) return "0";
  const digits = Math.min(9, Math.max(2, 1 - Math.floor(Math.log10(Math.abs(v)))));
  return v.toFixed(digits).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}
