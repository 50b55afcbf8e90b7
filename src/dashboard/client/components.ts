/**
 * Components both views and their panels share: the top bar, section tabs, an error line and a
 * request's generation record. A leaf module: it imports no view, so the views import it (and
 * app.ts imports the views) without an import circle.
 */
import { html } from "htm/preact";
import { count, ms, usd, when } from "./format";

/** The bar across the top of both views. */
export function TopBar(props: { title: string; subtitle?: string; onSignOut: () => void }) {
  return html`<header class="topbar">
    <div><strong>Switchyard</strong> <span class="muted">${props.title}</span>${props.subtitle ? html` <span class="muted small">${props.subtitle}</span>` : null}</div>
    <button class="link" id="sign-out" onClick=${props.onSignOut}>Sign out</button>
  </header>`;
}

/** Section tabs: buttons, so they work on a phone without a menu. */
export function Tabs(props: { tabs: [string, string][]; current: string; onPick: (id: string) => void }) {
  return html`<nav class="tabs">${props.tabs.map(
    ([id, label]) => html`<button id=${"tab-" + id} class=${id === props.current ? "tab current" : "tab"} onClick=${() => props.onPick(id)}>${label}</button>`,
  )}</nav>`;
}

/** An error line (role=alert) that a failed action fills in. */
export function ErrorLine(props: { error: string }) {
  return props.error ? html`<p class="error" role="alert">${props.error}</p>` : null;
}

/** One request's generation record (the same object GET /v1/generation returns). */
export function GenerationRecord(props: { record: any; onClose?: () => void }) {
  const r = props.record;
  const rows: [string, string][] = [
    ["Request id", r.id], ["Time (UTC)", when(r.created_at)], ["Model", r.model ?? "—"], ["Endpoint", r.endpoint ?? "—"],
    ["Service tier", r.service_tier ?? "—"], ["Status", r.status ?? "not recorded"], ["Latency", ms(r.latency)],
    ["Engine time", ms(r.generation_time)],
    r.characters ? ["Characters", count(r.characters)] : ["Tokens in / out", `${count(r.tokens_prompt)} / ${count(r.tokens_completion)}`],
    ["Cost", usd(r.total_cost)],
  ];
  return html`<section class="record" id="generation-record" aria-label="Generation record">
    <h3>Generation record ${props.onClose ? html`<button class="link" onClick=${props.onClose}>close</button>` : null}</h3>
    <dl>${rows.map(([k, v]) => html`<dt>${k}</dt><dd data-field=${k}>${v}</dd>`)}</dl>
    ${r.note ? html`<p class="muted small">${r.note}</p>` : null}
  </section>`;
}
