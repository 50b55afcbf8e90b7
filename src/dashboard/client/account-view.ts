/**
 * The account view: balance, spend (last 30 days per day and per model, charts), recent requests
 * with their generation records, the account's keys, and the playground.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, type SessionInfo } from "./api";
import { ErrorLine, GenerationRecord, Tabs, TopBar } from "./components";
import { Chart } from "./chart";
import { amounts, count, usd, usdTick, when } from "./format";
import { KeysPanel } from "./keys-panel";
import { Playground } from "./playground";
import { ConnectPanel } from "./connect-panel";

const DAY = 86_400;
const COLORS = ["#2563eb", "#db2777", "#16a34a", "#ea580c", "#7c3aed", "#0891b2", "#ca8a04", "#4b5563"];

export function AccountView(props: { session: SessionInfo; onSignOut: () => void }) {
  const [tab, setTab] = useState("overview");
  const [data, setData] = useState<any>(null);
  const [error, setError] = useState("");

  const load = () => api("GET", "/account").then(setData, (e) => setError(e.message));
  useEffect(() => {
    load();
  }, []);

  return html`<div class="page">
    <${TopBar} title="Account" subtitle=${data ? `${data.account.name} · ${data.account.id}${props.session.manages_keys === false ? " · limited key" : ""}` : ""} onSignOut=${props.onSignOut} />
    <${Tabs} tabs=${[["overview", "Overview"], ["keys", "Keys"], ["playground", "Playground"], ["connect", "Connect"]]} current=${tab} onPick=${setTab} />
    <${ErrorLine} error=${error} />
    ${data ? html`<${BalanceCards} money=${data.money} period=${data.period} />` : html`<p class="muted">Loading…</p>`}
    ${tab === "overview" && data ? html`<${Overview} data=${data} />` : null}
    ${tab === "keys" ? html`<${KeysPanel} list="/account/keys" create="/account/keys" revoke=${(id: string) => `/account/keys/${id}`} />` : null}
    ${tab === "playground" ? html`<${Playground} onBilled=${load} allowed=${props.session.allowed_models ?? null} />` : null}
    ${tab === "connect" ? html`<${ConnectPanel} />` : null}
  </div>`;
}

function Figure(props: { id: string; label: string; value: string; hint?: string }) {
  return html`<div class="card"><div class="label">${props.label}</div><div class="figure" id=${props.id}>${props.value}</div>${props.hint ? html`<div class="muted small">${props.hint}</div>` : null}</div>`;
}

function BalanceCards(props: { money: any; period: any }) {
  const m = props.money;
  return html`<section class="cards" aria-label="Balance">
    <${Figure} id="balance-available" label="Available" value=${usd(m.available)} hint="balance minus requests in flight" />
    <${Figure} id="balance-reserved" label="Reserved" value=${usd(m.reserved)} hint="held by requests in flight" />
    <${Figure} id="balance-total" label="Balance" value=${usd(m.balance)} />
    <${Figure} id="spend-period" label="Spent, last 30 days" value=${usd(props.period.totals.cost)} hint=${`${count(props.period.totals.requests)} requests`} />
    <${Figure} id="spend-month" label="Spent this month" value=${usd(m.spend.month)} hint=${`today ${usd(m.spend.day)}`} />
    <${Figure} id="spend-total" label="Spent, all time" value=${usd(m.spend.total)} hint=${`of ${usd(m.credited)} credited`} />
  </section>`;
}

/** The 30 days of the period as epoch seconds, and each day's value from rows keyed by day. */
function days(period: { start: string; end: string }): { x: number[]; keys: string[] } {
  const x: number[] = [];
  const keys: string[] = [];
  for (let t = Date.parse(period.start) / 1000; t < Date.parse(period.end) / 1000; t += DAY) {
    x.push(t);
    keys.push(new Date(t * 1000).toISOString().slice(0, 10));
  }
  return { x, keys };
}

function Overview(props: { data: any }) {
  const d = props.data;
  const [open, setOpen] = useState<any>(null);
  const { x, keys } = days(d.period);
  const perDay = new Map<string, number>(d.by_day.map((r: any) => [r.day, r.cost]));
  const models: string[] = d.by_model.map((r: any) => r.model ?? "unknown");
  const perDayModel = new Map<string, number>(d.by_day_model.map((r: any) => [`${r.day}|${r.model ?? "unknown"}`, r.cost]));

  const showRecord = async (id: string) => setOpen(await api("GET", `/account/generations/${encodeURIComponent(id)}`));

  return html`<section>
    <div class="charts">
      <${Chart} id="chart-daily" title="Spend per day (USD), last 30 days" daily=${true} yTick=${usdTick} x=${x}
        series=${[{ spec: { label: "spend", color: COLORS[0]!, bars: true, format: usd }, values: keys.map((k) => perDay.get(k) ?? 0) }]} />
      <${Chart} id="chart-models" title="Spend per day by model (USD)" daily=${true} yTick=${usdTick} x=${x}
        series=${models.map((m, i) => ({ spec: { label: m, color: COLORS[i % COLORS.length]!, format: usd }, values: keys.map((k) => perDayModel.get(`${k}|${m}`) ?? 0) }))} />
    </div>
    <h2>By model, last 30 days</h2>
    <div class="scroll"><table id="by-model">
      <thead><tr><th>Model</th><th class="num">Requests</th><th class="num">Tokens in</th><th class="num" title="Of the tokens in, read from the engine's prompt cache (billed at the cached-input price where the model has one)">Cached in</th><th class="num">Tokens out</th><th class="num">Characters</th><th class="num">Cost</th></tr></thead>
      <tbody>${d.by_model.map((r: any) => html`<tr>
        <td>${r.model}</td><td class="num">${count(r.requests)}</td><td class="num">${count(r.input_tokens)}</td><td class="num">${count(r.cached_input_tokens)}</td>
        <td class="num">${count(r.output_tokens)}</td><td class="num">${count(r.characters)}</td><td class="num">${usd(r.cost)}</td></tr>`)}
      </tbody></table></div>
    <h2>${d.recent_scope === "key" ? "Recent requests with this key" : "Recent requests"}</h2>
    ${d.recent.length === 0 ? html`<p class="muted">No ${d.recent_scope === "key" ? "" : "billed "}requests yet. Try the playground.</p>` : null}
    <div class="scroll"><table id="recent">
      <thead><tr><th>Time (UTC)</th><th>Model</th><th>Amount</th><th>Status</th><th class="num">Cost</th><th>Request</th></tr></thead>
      <tbody>${d.recent.map((r: any) => html`<tr>
        <td>${when(r.created_at)}</td><td>${r.model}</td><td>${amounts(r)}</td><td>${r.status ?? "—"}</td>
        <td class="num">${usd(r.total_cost)}</td>
        <td><a href=${"#" + r.id} class="mono" onClick=${(e: Event) => (e.preventDefault(), showRecord(r.id))}>${r.id.slice(0, 14)}…</a></td></tr>`)}
      </tbody></table></div>
    ${open ? html`<${GenerationRecord} record=${open} onClose=${() => setOpen(null)} />` : null}
  </section>`;
}
