/**
 * The operator's request log: every recorded request across accounts, newest first, filtered by
 * account, key, model, status and time (a click on an account, key or model narrows to it), a page
 * at a time, and exported as CSV (the server streams every matching row; the link carries the same filters).
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { amounts, ms, usd, when } from "./format";

const FIELDS = ["account", "key", "model", "status", "from", "to"] as const;
type Filters = Partial<Record<(typeof FIELDS)[number], string>>;

function queryOf(f: Filters, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  for (const k of FIELDS) if (f[k]) q.set(k, f[k]!);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}

export function RequestLog(props: { account?: string }) {
  const [filters, setFilters] = useState<Filters>(props.account ? { account: props.account } : {});
  const [cursors, setCursors] = useState<string[]>([]);
  const [page, setPage] = useState<any>(null);
  const [error, setError] = useState("");

  const load = (f: Filters, cursor: string | undefined) => {
    setError("");
    api("GET", "/operator/requests" + queryOf(f, cursor ? { cursor, limit: "50" } : { limit: "50" })).then(setPage, (e) => setError(e.message));
  };
  useEffect(() => load(filters, cursors[cursors.length - 1]), [filters, cursors]);

  const apply = (e: Event) => {
    e.preventDefault();
    const form = (e.target as HTMLFormElement).elements;
    const f: Filters = {};
    for (const k of FIELDS) {
      const v = (form.namedItem(k) as HTMLInputElement).value.trim();
      if (v) f[k] = v;
    }
    setCursors([]);
    setFilters(f);
  };

  /** A cell that, clicked, narrows the log to its value. */
  const by = (field: "account" | "key" | "model", value: string) => html`<button class="link filter-by" data-filter=${field}
    title=${`only this ${field}`} onClick=${() => (setCursors([]), setFilters({ ...filters, [field]: value }))}>${value}</button>`;

  return html`<section aria-label="Requests">
    <h2>Requests</h2>
    <form class="inline" id="log-filters" onSubmit=${apply}>
      <input name="account" placeholder="account id" value=${filters.account ?? ""} />
      <input name="key" placeholder="key id" value=${filters.key ?? ""} />
      <input name="model" placeholder="model" value=${filters.model ?? ""} />
      <select name="status" value=${filters.status ?? ""}><option value="">any status</option><option value="completed">completed</option>
        <option value="cancelled">cancelled</option><option value="failed">failed</option></select>
      <input name="from" placeholder="from (2026-11-01 or ISO time, UTC)" value=${filters.from ?? ""} />
      <input name="to" placeholder="to (exclusive)" value=${filters.to ?? ""} />
      <button type="submit">Filter</button>
      <a class="button secondary" id="log-csv" href=${"/dashboard/api/operator/requests.csv" + queryOf(filters)} download>Export CSV</a>
    </form>
    <${ErrorLine} error=${error} />
    <div class="scroll"><table id="request-log">
      <thead><tr><th>Time (UTC)</th><th>Account</th><th>Key</th><th>Model</th><th>Endpoint</th><th>Status</th><th class="num">Latency</th><th>Amount</th><th class="num">Cost</th><th class="num" title="What the engine's prompt cache took off the cost">Cache saved</th><th>Request</th></tr></thead>
      <tbody>${(page?.data ?? []).map((r: any) => html`<tr data-request-id=${r.id}>
        <td>${when(r.created_at)}</td><td class="mono small">${by("account", r.account_id)}</td><td class="mono small">${r.key_id ? by("key", r.key_id) : "—"}</td><td>${by("model", r.model)}</td>
        <td class="small">${r.endpoint}</td><td class=${r.status === "failed" ? "error" : ""}>${r.status} ${r.http_status}</td>
        <td class="num">${ms(r.latency)}</td><td class="small">${amounts(r)}</td><td class="num">${usd(r.total_cost)}</td>
        <td class="num cache-saved">${r.tokens_cached || r.tokens_cache_write ? usd(r.cache_saved) : "—"}</td><td class="mono small">${r.id}</td></tr>`)}
      </tbody></table></div>
    ${page && page.data.length === 0 ? html`<p class="muted">No requests match.</p>` : null}
    <div class="pager">
      <button class="secondary" id="log-newer" disabled=${cursors.length === 0} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
      <span class="muted small">page ${cursors.length + 1}</span>
      <button class="secondary" id="log-older" disabled=${!page?.next_cursor} onClick=${() => setCursors([...cursors, page.next_cursor])}>Older</button>
    </div>
  </section>`;
}
