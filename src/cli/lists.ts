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
/** A price as the API writes it (a plain-decimal JSON number), as text. */
const price = (v: unknown) => (v === undefined || v === null ? v : JSON.stringify(v));

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
    case "catalog list":
      return table(
        rowsOf(out),
        [
          { title: "id", value: (m) => m.id },
          { title: "kind", value: (m) => m.kind },
          { title: "owned by", value: (m) => m.owned_by },
          { title: "context", value: (m) => m.context_window, right: true },
          { title: "in $/1M", value: (m) => price((m.pricing as Row)?.input_per_million), right: true },
          { title: "cached $/1M", value: (m) => price((m.pricing as Row)?.cached_input_per_million), right: true },
          { title: "out $/1M", value: (m) => price((m.pricing as Row)?.output_per_million), right: true },
          { title: "enabled", value: (m) => (m.enabled ? "yes" : "no") },
          { title: "live", value: (m) => (m.live ? "yes" : "no") },
          { title: "source", value: (m) => m.source },
        ],
        "no models",
      );
    case "upstreams list":
      return table(
        rowsOf(out),
        [
          { title: "name", value: (u) => u.name },
          { title: "base url", value: (u) => u.base_url },
          { title: "key", value: (u) => (u.has_key ? "yes" : "no") },
          { title: "source", value: (u) => u.source },
        ],
        "no upstreams",
      );
    case "routes list":
      return table(
        rowsOf(out).flatMap((m) => ((m.routes as Row[]) ?? []).map((r): Row => ({ ...r, publicId: m.model, source: m.source }))),
        [
          { title: "model", value: (r) => r.publicId },
          { title: "#", value: (r) => r.index, right: true },
          { title: "upstream", value: (r) => r.upstream },
          { title: "upstream model", value: (r) => r.model },
          { title: "weight", value: (r) => r.weight, right: true },
          { title: "priority", value: (r) => (r.priority ? "yes" : "no") },
          { title: "pinned", value: (r) => (r.pinned ? "yes" : "no") },
          { title: "state", value: (r) => r.state },
          { title: "source", value: (r) => r.source },
        ],
        "no routes configured (models go to SWITCHYARD_UPSTREAM_URL when it is set)",
      );
    default:
      return null;
  }
}
