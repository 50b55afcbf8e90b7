/** Plain-text tables for list commands (people); `--json` prints the JSON instead (scripts). */
import { usdJsonText } from "../billing/money";

export interface Column<T> {
  title: string;
  value: (row: T) => unknown;
  /** Right-aligned (numbers). */
  right?: boolean;
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return "-";
  const usd = usdJsonText(v);
  if (usd !== null) return usd;
  if (typeof v === "number" && v > 1_000_000_000 && v < 100_000_000_000 && Number.isInteger(v)) return new Date(v * 1000).toISOString().replace(".000Z", "Z");
  // One line per row whatever the data holds.
  return String(v).replace(/[\r\n\t]+/g, " ");
}

/** Columns padded to their widest cell, two spaces apart; a line saying so when there are no rows. */
export function table<T>(rows: T[], columns: Column<T>[], empty: string): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.title.toUpperCase())), ...cells.map(line)].join("\n") + "\n";
}
