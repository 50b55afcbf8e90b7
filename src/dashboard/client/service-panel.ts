/** Service state: routes and breakers, local models, in-flight work, and the last hour's request charts. */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { Chart } from "./chart";
import { count, ms } from "./format";

const REFRESH_MS = 10_000;
const perSec = (v: number) => `${v.toFixed(2)}/s`;

export function ServicePanel() {
  const [state, setState] = useState<any>(null);
  const [error, setError] = useState("");

  useEffect(() => {
    const load = () => api("GET", "/operator/service").then(setState, (e) => setError(e.message));
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  if (!state) return html`<${ErrorLine} error=${error} /><p class="muted">Loading…</p>`;
  const h: any[] = state.history;
  const x = h.map((p) => p.t);
  const now = Math.round(Date.now() / 1000);
  const hour: [number, number] = [now - 3600, now];
  return html`<section aria-label="Service">
    <${ErrorLine} error=${error} />
    <section class="cards">
      <div class="card"><div class="label">Requests in flight</div><div class="figure" id="in-flight">${count(state.requests_in_flight)}</div></div>
      <div class="card"><div class="label">Credit holds open</div><div class="figure">${count(state.holds_open)}</div></div>
      <div class="card"><div class="label">Routes open (breaker)</div><div class="figure">${count(state.routes.filter((r: any) => r.breaker !== "closed").length)}</div></div>
    </section>
    <div class="charts">
      <${Chart} id="chart-rate" title="API requests per second, last hour" xRange=${hour} x=${x} series=${[{ spec: { label: "requests", color: "#2563eb", format: perSec }, values: h.map((p) => p.rps) }]} />
      <${Chart} id="chart-errors" title="Errors per second (4xx, 5xx)" xRange=${hour} x=${x} series=${[
        { spec: { label: "4xx", color: "#ca8a04", format: perSec }, values: h.map((p) => p.clientErrorsPerSec) },
        { spec: { label: "5xx", color: "#dc2626", format: perSec }, values: h.map((p) => p.serverErrorsPerSec) },
      ]} />
      <${Chart} id="chart-latency" title="Latency (ms): mean and 95th percentile" xRange=${hour} yTick=${(v: number) => String(Math.round(v))} x=${x} series=${[
        { spec: { label: "mean", color: "#16a34a", format: ms }, values: h.map((p) => p.meanMs) },
        { spec: { label: "p95", color: "#7c3aed", format: ms }, values: h.map((p) => p.p95Ms) },
      ]} />
    </div>
    <h2>Chat routes</h2>
    ${state.routes.length === 0 ? html`<p class="muted">No chat routes: set SWITCHYARD_UPSTREAM_URL or SWITCHYARD_ROUTES.</p>` : null}
    <div class="scroll"><table id="routes">
      <thead><tr><th>Model</th><th>Route</th><th>Upstream</th><th>Upstream model</th><th class="num">Weight</th><th>Priority</th><th>Breaker</th><th class="num">Failures</th></tr></thead>
      <tbody>${state.routes.map((r: any) => html`<tr>
        <td>${r.model}</td><td class="mono small">${r.route}</td><td>${r.upstream}</td><td>${r.upstream_model}</td><td class="num">${r.weight}</td>
        <td>${r.priority ? "yes" : ""}</td><td class=${r.breaker === "closed" ? "ok" : "error"}>${r.breaker}</td><td class="num">${r.consecutive_failures}</td></tr>`)}
      </tbody></table></div>
    <h2>Local models</h2>
    <div class="scroll"><table id="local-models">
      <thead><tr><th>Model</th><th>Kind</th><th>State</th></tr></thead>
      <tbody>${state.local_models.map((m: any) => html`<tr><td>${m.model}</td><td>${m.kind}</td><td class=${m.loaded ? "ok" : "muted"}>${m.loaded ? "loaded" : "not loaded"}</td></tr>`)}</tbody>
    </table></div>
  </section>`;
}
