/** The tables the list commands print for people (`--json` prints the admin API's JSON instead). */
import { usdJsonText } from "../billing/money";
import { table } from "./table";

type Row = Record<string, unknown>;
const rowsOf = (out: unknown): Row[] => ((out as { data?: Row[] })?.data ?? []) as Row[];
/** Money as the exact decimal the API writes, with at least cents: "3" → "3.00", "0.000123" stays. */
const usd = (v: unknown) => {
  const text = usdJsonText(v);
  if (text === null) return v;
  const [whole, frac = ""] = text.split(".");
  return `${whole}.${frac.padEnd(2, "0")}`;
};

/** The table for a list command's result; null for any other command (printed as JSON). */
export function listTable(command: string, out: unknown): string | null {
  switch (command) {
    case "accounts list":
      return table(
        rowsOf(out),
        [
          { title: "id", value: (a) => a.id },
          { title: "name", value: (a) => a.name },
          { title: "balance", value: (a) => usd(a.balance), right: true },
          { title: "reserved", value: (a) => usd(a.reserved), right: true },
          { title: "disabled", value: (a) => (a.disabled ? "yes" : "no") },
          { title: "rpm", value: (a) => a.rate_limit_rpm, right: true },
          { title: "concurrency", value: (a) => a.concurrency_limit, right: true },
          { title: "created", value: (a) => a.created_at },
        ],
        "no accounts",
      );
    case "keys list":
      return table(
        rowsOf(out),
        [
          { title: "id", value: (k) => k.id },
          { title: "prefix", value: (k) => k.prefix },
          { title: "name", value: (k) => k.name },
          { title: "created", value: (k) => k.created_at },
          { title: "revoked", value: (k) => k.revoked_at },
        ],
        "no keys",
      );
    case "ledger":
      return table(
        rowsOf(out),
        [
          { title: "id", value: (e) => e.id, right: true },
          { title: "created", value: (e) => e.created_at },
          { title: "kind", value: (e) => e.kind },
          { title: "amount", value: (e) => usd(e.amount), right: true },
          { title: "balance after", value: (e) => usd(e.balance_after), right: true },
          { title: "model", value: (e) => e.model },
          { title: "request", value: (e) => e.request_id },
          { title: "reason", value: (e) => e.reason },
        ],
        "no ledger entries",
      );
    default:
      return null;
  }
}
