/**
 * The operator's models page: each catalog model with its prices, context window and whether it
 * is live, and each chat route with its circuit breaker and a "test" button (one tiny unbilled
 * request straight to that route's upstream; the answer's status and time are shown).
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./app";
import { count, ms } from "./format";

/** A catalog price (an exact decimal string per million) as "$0.15". */
const price = (v: string | undefined) => (v === undefined ? "—" : "$" + v);

export function ModelsPage() {
  const [models, setModels] = useState<any[] | null>(null);
  const [tests, setTests] = useState<Record<string, any>>({});
  const [error, setError] = useState("");
  const load = () => api("GET", "/operator/models").then((r) => setModels(r.data), (e) => setError(e.message));
  useEffect(() => {
    load();
  }, []);

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

  return html`<section aria-label="Models">
    <h2>Models and prices <button class="secondary" onClick=${load}>Refresh</button></h2>
    <p class="muted small">Prices per million tokens (or characters, for speech). Editing is done in the catalog file, SWITCHYARD_ROUTES or the admin API.</p>
    <${ErrorLine} error=${error} />
    <div class="scroll"><table id="models">
      <thead><tr><th>Model</th><th>Type</th><th>State</th><th class="num">Context</th><th class="num">Max output</th><th class="num">Input</th><th class="num">Output</th><th class="num">Characters</th><th>Turbo</th></tr></thead>
      <tbody>${(models ?? []).map((m) => html`<tr data-model=${m.id}>
        <td>${m.id}${m.discovered ? html` <span class="tag">from upstream</span>` : null}</td><td>${m.type}</td>
        <td class=${m.live ? "ok" : "muted"}>${m.live ? "live" : "not served"}</td>
        <td class="num">${m.context_window ? count(m.context_window) : "—"}</td><td class="num">${m.max_output_tokens ? count(m.max_output_tokens) : "—"}</td>
        <td class="num">${price(m.pricing.input_per_million_tokens)}</td><td class="num">${price(m.pricing.output_per_million_tokens)}</td>
        <td class="num">${price(m.pricing.per_million_characters)}</td><td>${m.turbo_available ? "yes" : "—"}</td></tr>`)}
      </tbody></table></div>
    <h2>Routes</h2>
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
