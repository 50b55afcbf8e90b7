/**
 * The operator's route settings (docs/live-config.md): each model's configured routes and where
 * they come from (admin, file); setting a model's routes (upstream, upstream model, weight,
 * priority, pinned), taking a model offline (no routes), and removing routes written here (the
 * file's routes or SWITCHYARD_UPSTREAM_URL serve the model again).
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { checked, Field, FormErrorLine, useFormError, value, useShownOnOpen } from "./field-form";

interface RouteRow {
  /** A stable key, so the inputs of a row stay with it when another row is removed. */
  key: number;
  upstream: string;
  model: string;
  weight: number | string;
  priority: boolean;
  pinned: boolean;
}

const routesPath = (model: string) => "/operator/catalog/routes/" + model.split("/").map(encodeURIComponent).join("/");
let nextKey = 0;
const blank = (upstream = ""): RouteRow => ({ key: nextKey++, upstream, model: "", weight: 1, priority: false, pinned: false });

export function RouteSettings(props: { version: number; onChanged: () => void }) {
  const [configured, setConfigured] = useState<any[] | null>(null);
  const [upstreams, setUpstreams] = useState<string[]>([]);
  const [models, setModels] = useState<string[]>([]);
  const [editing, setEditing] = useState<{ model: string; rows: RouteRow[] } | null>(null);
  const [error, setError] = useState("");
  const [done, setDone] = useState("");
  useEffect(() => {
    Promise.all([api("GET", "/operator/catalog/routes"), api("GET", "/operator/catalog/upstreams"), api("GET", "/operator/catalog/models")]).then(([r, u, m]) => {
      setConfigured(r.data);
      setUpstreams(u.data.map((x: any) => x.name));
      setModels(m.data.filter((x: any) => x.kind === "chat").map((x: any) => x.id));
    }, (e) => setError(e.message));
  }, [props.version]);

  const edit = (c: any) => (setDone(""), setEditing({ model: c.model, rows: c.routes.map((r: any) => ({ key: nextKey++, upstream: r.upstream, model: r.model, weight: r.weight, priority: r.priority, pinned: r.pinned })) }));
  const saved = (what: string) => (setEditing(null), setDone(what), props.onChanged());

  return html`<section aria-label="Route settings">
    <h2>Route settings <button id="routes-set" onClick=${() => (setDone(""), setEditing({ model: "", rows: [blank(upstreams[0])] }))}>Set a model's routes</button></h2>
    <${ErrorLine} error=${error} />
    ${done ? html`<p class="ok" role="status" id="routes-done">${done}</p>` : null}
    ${editing ? html`<${RoutesEditor} key=${editing.model || "new"} initial=${editing} upstreams=${upstreams} models=${models} onSaved=${saved} onCancel=${() => setEditing(null)} />` : null}
    <div class="scroll"><table id="route-settings">
      <thead><tr><th>Model</th><th>Source</th><th>Routes (upstream → upstream model, weight)</th><th>Change</th></tr></thead>
      <tbody>${(configured ?? []).map((c) => html`<tr data-routes-model=${c.model}>
        <td>${c.model}</td><td>${c.source}</td>
        <td class="small">${c.routes.length === 0 ? html`<span class="error">offline (no routes)</span>` : c.routes.map((r: any) => html`<div>
          ${r.upstream} → <span class="mono">${r.model}</span>, ${r.weight}${r.priority ? ", priority" : ""}${r.pinned ? ", pinned" : ""}</div>`)}</td>
        <td><button class="secondary routes-edit" onClick=${() => edit(c)}>Edit</button></td></tr>`)}
      </tbody></table></div>
    ${configured && configured.length === 0 ? html`<p class="muted small">No routes are configured: chat models go to SWITCHYARD_UPSTREAM_URL, if set.</p>` : null}
  </section>`;
}

function RoutesEditor(props: { initial: { model: string; rows: RouteRow[] }; upstreams: string[]; models: string[]; onSaved: (what: string) => void; onCancel: () => void }) {
  const [rows, setRows] = useState<RouteRow[]>(props.initial.rows);
  const { error, setError, fail } = useFormError();
  const ref = useShownOnOpen();
  const names = ["model", "routes", ...rows.map((_, i) => `routes[${i}]`)];

  /** The rows as typed (kept in state, so adding or removing a row keeps what was typed in the others). */
  const read = (f: HTMLFormElement): RouteRow[] => rows.map((row, i) => {
    const w = value(f, `routes[${i}].weight`);
    return {
      key: row.key,
      upstream: value(f, `routes[${i}].upstream`),
      model: value(f, `routes[${i}].model`),
      weight: /^\d+(\.\d+)?$/.test(w) ? Number(w) : w,
      priority: checked(f, `routes[${i}].priority`),
      pinned: checked(f, `routes[${i}].pinned`),
    };
  });
  const send = async (f: HTMLFormElement, method: "PUT" | "DELETE", routes: RouteRow[] | null, what: string) => {
    setError(null);
    const model = value(f, "model");
    if (model === "") return setError({ message: "Invalid 'model': name the model whose routes to set.", param: "model" });
    try {
      const body = routes === null ? undefined : { routes: routes.map((r) => ({ upstream: r.upstream, ...(r.model !== "" ? { model: r.model } : {}), weight: r.weight, priority: r.priority, pinned: r.pinned })) };
      await api(method, routesPath(model), body);
      props.onSaved(what.replace("{model}", model));
    } catch (err) {
      fail(err);
    }
  };
  const form = (e: Event) => (e.target as HTMLElement).closest("form") as HTMLFormElement;

  return html`<form class="editor" id="routes-form" ref=${ref} autocomplete="off" onSubmit=${(e: Event) => (e.preventDefault(), send(e.target as HTMLFormElement, "PUT", read(e.target as HTMLFormElement), "Routes of {model} saved."))}>
    <h3>Routes of a model</h3>
    <${FormErrorLine} error=${error} names=${names} />
    <datalist id="route-models">${props.models.map((m) => html`<option value=${m} />`)}</datalist>
    <div class="grid"><${Field} name="model" label="Model" error=${error}>
      <input name="model" list="route-models" required defaultValue=${props.initial.model} readonly=${props.initial.model !== ""} /></${Field}></div>
    <${FormErrorLine} error=${error?.param === "routes" ? error : null} names=${[]} />
    ${rows.map((r, i) => html`<div class="route-row" key=${r.key} data-row=${i}>
      <${Field} name=${`routes[${i}].upstream`} label="Upstream" error=${error}>
        <select name=${`routes[${i}].upstream`}>${[...new Set([...props.upstreams, r.upstream].filter(Boolean))].map((u) => html`<option value=${u} defaultSelected=${u === r.upstream}>${u}</option>`)}</select></${Field}>
      <${Field} name=${`routes[${i}].model`} label="Upstream model" error=${error}><input name=${`routes[${i}].model`} placeholder="same id" defaultValue=${r.model} /></${Field}>
      <${Field} name=${`routes[${i}].weight`} label="Weight" error=${error}><input name=${`routes[${i}].weight`} inputmode="decimal" defaultValue=${String(r.weight)} /></${Field}>
      <label class="check"><input type="checkbox" name=${`routes[${i}].priority`} defaultChecked=${r.priority} /> priority</label>
      <label class="check"><input type="checkbox" name=${`routes[${i}].pinned`} defaultChecked=${r.pinned} /> pinned</label>
      <button type="button" class="secondary route-row-remove" onClick=${(e: Event) => setRows(read(form(e)).filter((_, j) => j !== i))}>Remove route</button>
    </div>`)}
    <div class="actions">
      <button type="button" class="secondary" id="route-row-add" onClick=${(e: Event) => setRows([...read(form(e)), blank(props.upstreams[0])])}>Add a route</button>
      <button type="submit" id="routes-save">Save routes</button>
      <button type="button" class="danger" id="routes-offline" onClick=${(e: Event) => send(form(e), "PUT", [], "{model} is offline (no routes).")}>Take offline</button>
      <button type="button" class="secondary" id="routes-remove" onClick=${(e: Event) => send(form(e), "DELETE", null, "Routes written for {model} removed.")}>Remove written routes</button>
      <button type="button" class="secondary" onClick=${props.onCancel}>Cancel</button>
    </div>
  </form>`;
}
