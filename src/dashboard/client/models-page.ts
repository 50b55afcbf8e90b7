/**
 * The operator's models page (docs/dashboard.md): the catalog with its prices, editable live
 * (catalog-models.ts); each served chat route with its circuit breaker and a "test" button (one
 * tiny unbilled request straight to that route's upstream; the answer's status and time are
 * shown); the route settings and the upstreams, editable live too. Every change reloads the page's
 * sections, so what is shown is what the server now serves.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { ms } from "./format";
import { CatalogModels } from "./catalog-models";
import { RouteSettings } from "./catalog-routes";
import { Upstreams } from "./catalog-upstreams";

export function ModelsPage() {
  const [version, setVersion] = useState(0);
  const changed = () => setVersion((v) => v + 1);
  return html`<div>
    <${CatalogModels} version=${version} onChanged=${changed} />
    <${ServedRoutes} version=${version} />
    <${RouteSettings} version=${version} onChanged=${changed} />
    <${Upstreams} version=${version} onChanged=${changed} />
  </div>`;
}

function ServedRoutes(props: { version: number }) {
  const [models, setModels] = useState<any[] | null>(null);
  const [tests, setTests] = useState<Record<string, any>>({});
  const [error, setError] = useState("");
  useEffect(() => {
    api("GET", "/operator/models").then((r) => setModels(r.data), (e) => setError(e.message));
  }, [props.version]);
  const test = async (model: string, route: string) => {
    setTests((t) => ({ ...t, [route]: { running: true } }));
    try {
      const r = await api("POST", "/operator/routes/test", { model, route });
      setTests((t) => ({ ...t, [route]: r }));
    } catch (e) {
      setTests((t) => ({ ...t, [route]: { ok: false, error: (e as Error).message } }));
    }
  };

  const result = (r: any) => !r ? null : r.running ? html`<span class="muted">testing…</span>`
    : r.ok ? html`<span class="ok">ok · HTTP ${r.status} · ${ms(r.latency_ms)}</span>`
    : html`<span class="error">failed: ${r.error}${r.latency_ms !== undefined ? ` · ${ms(r.latency_ms)}` : ""}</span>`;

  return html`<section aria-label="Served routes">
    <h2>Served routes</h2>
    <${ErrorLine} error=${error} />
    <div class="scroll"><table id="model-routes">
      <thead><tr><th>Model</th><th>Route</th><th>Upstream</th><th>Upstream model</th><th class="num">Weight</th><th>Priority</th><th>Breaker</th><th class="num">Failures</th><th>Test</th></tr></thead>
      <tbody>${(models ?? []).flatMap((m) => m.routes.map((r: any) => html`<tr data-route=${r.route}>
        <td>${r.model}</td><td class="mono small">${r.route}</td><td>${r.upstream}</td><td class="mono small">${r.upstream_model}</td>
        <td class="num">${r.weight}</td><td>${r.priority ? "yes" : "—"}</td>
        <td class=${r.breaker === "closed" ? "ok" : "error"}>${r.breaker}</td><td class="num">${r.consecutive_failures}</td>
        <td><button class="secondary route-test" onClick=${() => test(r.model, r.route)}>Test</button> <span class="route-result">${result(tests[r.route])}</span></td></tr>`))}
      </tbody></table></div>
    ${models && models.every((m) => m.routes.length === 0) ? html`<p class="muted">No chat routes are served right now.</p>` : null}
  </section>`;
}
