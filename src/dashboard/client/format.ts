/** How figures are shown. Money arrives as exact USD numbers (at most 9 decimals) and stays exact. */

/** 4.9999802 → "$4.9999802", 25 → "$25.00", 0.000000001 → "$0.000000001". */
export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  const [whole = "0", frac = ""] = Math.abs(n).toFixed(9).replace(/0+$/, "").split(".");
  return `${n < 0 ? "−" : ""}$${Number(whole).toLocaleString("en-US")}.${frac.padEnd(2, "0")}`;
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

/** Tokens in/out, or characters for speech. */
export function amounts(r: { tokens_prompt?: number; tokens_completion?: number; characters?: number }): string {
  if (r.characters) return `${count(r.characters)} chars`;
  return `${count(r.tokens_prompt ?? 0)} in / ${count(r.tokens_completion ?? 0)} out`;
}

/** A short axis label for a USD amount (the chart's title says USD): "0", "0.00002", "1.5". */
export function usdTick(v: number): string {
  if (v === 0) return "0";
  const digits = Math.min(9, Math.max(2, 1 - Math.floor(Math.log10(Math.abs(v)))));
  return v.toFixed(digits).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}
