/**
 * The operator's overview: revenue (sum of charges across accounts, from the ledger) today and
 * over the last 7 and 30 days, and the top models and accounts by spend over a chosen period.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { count, usd, when } from "./format";

const PERIODS: [number, string][] = [[1, "today"], [7, "last 7 days"], [30, "last 30 days"], [90, "last 90 days"]];

export function OperatorOverview(props: { onAccount?: (id: string) => void }) {
  const [days, setDays] = useState(30);
  const [data, setData] = useState<any>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    api("GET", `/operator/overview?days=${days}`).then(setData, (e) => setError(e.message));
  }, [days]);
  if (!data) return html`<${ErrorLine} error=${error} />${error ? null : html`<p class="muted">Loading…</p>`}`;
  const r = data.revenue;
  const card = (id: string, label: string, v: any) => html`<div class="card"><div class="label">${label}</div>
    <div class="figure" id=${id}>${usd(v.revenue)}</div><div class="muted small">${count(v.requests)} billed requests</div></div>`;
  return html`<section aria-label="Overview">
    <h2>Revenue</h2>
    <p class="muted small">Charges across all accounts, from the ledger (UTC days, today included).</p>
    <div class="cards">${card("revenue-today", "Today", r.today)}${card("revenue-7d", "Last 7 days", r.last_7_days)}${card("revenue-30d", "Last 30 days", r.last_30_days)}</div>
    <${ErrorLine} error=${error} />
    <label class="inline-label">Top models and accounts by spend, <select id="top-period" value=${days} onChange=${(e: Event) => setDays(Number((e.target as HTMLSelectElement).value))}>
      ${PERIODS.map(([d, label]) => html`<option value=${d}>${label}</option>`)}</select></label>
    <p class="muted small">${when(data.top.start)} to ${when(data.top.end)} UTC</p>
    <div class="forms">
      <div><h3>Top models</h3><div class="scroll"><table id="top-models">
        <thead><tr><th>Model</th><th class="num">Requests</th><th class="num">Spend</th></tr></thead>
        <tbody>${data.top.models.map((m: any) => html`<tr><td>${m.model ?? "—"}</td><td class="num">${count(m.requests)}</td><td class="num">${usd(m.revenue)}</td></tr>`)}</tbody>
      </table></div>${data.top.models.length === 0 ? html`<p class="muted">No charges in this period.</p>` : null}</div>
      <div><h3>Top accounts</h3><div class="scroll"><table id="top-accounts">
        <thead><tr><th>Account</th><th class="num">Requests</th><th class="num">Spend</th></tr></thead>
        <tbody>${data.top.accounts.map((a: any) => html`<tr><td class="mono small">${props.onAccount
          ? html`<a href=${"#" + a.account_id} onClick=${(e: Event) => (e.preventDefault(), props.onAccount!(a.account_id))}>${a.name ?? a.account_id}</a>` : a.account_id}
          ${a.name ? html` <span class="muted">${a.account_id}</span>` : null}</td>
          <td class="num">${count(a.requests)}</td><td class="num">${usd(a.revenue)}</td></tr>`)}</tbody>
      </table></div>${data.top.accounts.length === 0 ? html`<p class="muted">No charges in this period.</p>` : null}</div>
    </div>
  </section>`;
}
