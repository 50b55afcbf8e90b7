/**
 * The operator's catalog of models (docs/dashboard.md): every entry with where it comes from
 * (embedded, file, admin, discovered), whether it is enabled and live, its context window and
 * prices; adding a chat model, editing its prices and limits, disabling or enabling it, and
 * removing an entry written here (the file's or embedded entry serves again). Prices are typed and
 * sent as decimal strings, never floats.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { count } from "./format";
import { checked, decimalText, Field, FormErrorLine, useFormError, value, whole, useShownOnOpen } from "./field-form";

const FIELDS = ["id", "owned_by", "kind", "context_window", "max_output_tokens", "pricing", "input_modalities", "turbo"];
const price = (v: number | undefined) => (v === undefined ? "—" : "$" + decimalText(v));
const modelPath = (id: string) => "/operator/catalog/models/" + id.split("/").map(encodeURIComponent).join("/");

export function CatalogModels(props: { version: number; onChanged: () => void }) {
  const [models, setModels] = useState<any[] | null>(null);
  const [editing, setEditing] = useState<any | null>(null);
  const [error, setError] = useState("");
  const [done, setDone] = useState("");
  const load = () => api("GET", "/operator/catalog/models").then((r) => setModels(r.data), (e) => setError(e.message));
  useEffect(() => {
    load();
  }, [props.version]);

  const act = async (what: string, method: string, path: string, body?: unknown) => {
    setError("");
    setDone("");
    try {
      await api(method, path, body);
      setDone(what);
      props.onChanged();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const saved = (what: string) => (setEditing(null), setDone(what), props.onChanged());

  return html`<section aria-label="Catalog">
    <h2>Models and prices <button class="secondary" onClick=${props.onChanged}>Refresh</button>
      <button id="model-add" onClick=${() => (setDone(""), setEditing({}))}>Add a model</button></h2>
    <p class="muted small">Prices in USD per million tokens (or characters, for speech). A prompt token the engine read from or wrote to its cache costs the cached-input or cache-write price where one is set, else the input price. Changes apply at once to requests that start afterwards; every charge keeps the price its request started with.</p>
    <${ErrorLine} error=${error} />
    ${done ? html`<p class="ok" role="status" id="catalog-done">${done}</p>` : null}
    ${editing ? html`<${ModelEditor} key=${editing.id ?? "new"} model=${editing} onSaved=${saved} onCancel=${() => setEditing(null)} />` : null}
    <div class="scroll"><table id="models">
      <thead><tr><th>Model</th><th>Type</th><th>State</th><th>Source</th><th>Enabled</th><th class="num">Context</th><th class="num">Max output</th>
        <th class="num">Input</th><th class="num" title="A prompt token read from the engine's cache; — : the input price">Cached input</th>
        <th class="num" title="A prompt token written to the engine's cache; — : the input price">Cache write</th>
        <th class="num">Output</th><th class="num">Characters</th><th>Turbo</th><th>Change</th></tr></thead>
      <tbody>${(models ?? []).map((m) => html`<tr data-model=${m.id} data-source=${m.source}>
        <td>${m.id}</td><td>${m.kind}</td>
        <td class=${m.live ? "ok" : "muted"}>${m.live ? "live" : "not served"}</td>
        <td>${m.source}</td><td class=${m.enabled ? "" : "error"}>${m.enabled ? "yes" : "disabled"}</td>
        <td class="num">${m.context_window ? count(m.context_window) : "—"}</td><td class="num">${m.max_output_tokens ? count(m.max_output_tokens) : "—"}</td>
        <td class="num">${price(m.pricing.input_per_million)}</td>
        <td class="num model-cached-price">${price(m.pricing.cached_input_per_million)}</td><td class="num model-cache-write-price">${price(m.pricing.cache_write_per_million)}</td>
        <td class="num">${price(m.pricing.output_per_million)}</td>
        <td class="num">${price(m.pricing.characters_per_million)}</td><td>${m.turbo ? "yes" : "—"}</td>
        <td><div class="row-actions">
          <button class="secondary model-edit" onClick=${() => (setDone(""), setEditing(m))}>Edit</button>
          <button class=${m.enabled ? "danger model-toggle" : "secondary model-toggle"}
            onClick=${() => act(m.enabled ? `${m.id} disabled.` : `${m.id} enabled.`, "PATCH", modelPath(m.id), { enabled: !m.enabled })}>${m.enabled ? "Disable" : "Enable"}</button>
          ${m.source === "admin" ? html`<button class="secondary model-remove" title="Remove the entry written here: the file's or embedded entry, if any, serves again"
            onClick=${() => act(`${m.id}: the entry written here was removed.`, "DELETE", modelPath(m.id))}>Remove</button>` : null}
        </div></td></tr>`)}
      </tbody></table></div>
  </section>`;
}

/** Adds a chat model (no `id` in props.model) or edits one: prices, context window, max output, modalities, turbo. */
function ModelEditor(props: { model: any; onSaved: (what: string) => void; onCancel: () => void }) {
  const m = props.model;
  const adding = m.id === undefined;
  const { error, setError, fail } = useFormError();
  const ref = useShownOnOpen();

  const submit = async (e: Event) => {
    e.preventDefault();
    const f = e.target as HTMLFormElement;
    setError(null);
    const pricing: Record<string, string> = {};
    for (const k of ["input_per_million", "output_per_million", "characters_per_million", "cached_input_per_million", "cache_write_per_million"]) {
      const v = value(f, `pricing.${k}`);
      if (v !== "") pricing[k] = v;
    }
    const modalities = ["text", ...(checked(f, "input_modalities.image") ? ["image"] : [])];
    const limits: Record<string, unknown> = {};
    for (const k of ["context_window", "max_output_tokens"]) {
      const v = value(f, k);
      if (v !== "") limits[k] = whole(v);
      else if (!adding) limits[k] = null;
    }
    const chat = adding || m.kind === "chat";
    const common = { ...limits, pricing, ...(chat ? { input_modalities: modalities, turbo: checked(f, "turbo") } : {}) };
    try {
      if (adding) {
        const body = { id: value(f, "id"), owned_by: value(f, "owned_by"), kind: "chat", ...common };
        await api("POST", "/operator/catalog/models", body);
        props.onSaved(`${body.id} added.`);
      } else {
        await api("PATCH", modelPath(m.id), common);
        props.onSaved(`${m.id} saved.`);
      }
    } catch (err) {
      fail(err);
    }
  };

  const p = m.pricing ?? {};
  return html`<form class="editor" id="model-form" ref=${ref} onSubmit=${submit} autocomplete="off">
    <h3>${adding ? "Add a chat model" : html`Edit <span class="mono">${m.id}</span> <span class="muted small">(${m.source})</span>`}</h3>
    <${FormErrorLine} error=${error} names=${FIELDS} />
    <div class="grid">
      ${adding ? html`<${Field} name="id" label="Id" error=${error}><input name="id" required maxlength="256" placeholder="acme/chat-1" /></${Field}>
        <${Field} name="owned_by" label="Owned by" error=${error}><input name="owned_by" required maxlength="256" placeholder="acme" /></${Field}>` : null}
      <${Field} name="context_window" label="Context window, tokens" error=${error}><input name="context_window" inputmode="numeric" defaultValue=${m.context_window ?? ""} /></${Field}>
      <${Field} name="max_output_tokens" label="Max output, tokens" error=${error}><input name="max_output_tokens" inputmode="numeric" defaultValue=${m.max_output_tokens ?? ""} /></${Field}>
      <${Field} name="pricing.input_per_million" label="Input, USD per 1M" error=${error}><input name="pricing.input_per_million" inputmode="decimal" placeholder="0.20" defaultValue=${decimalText(p.input_per_million)} /></${Field}>
      <${Field} name="pricing.output_per_million" label="Output, USD per 1M" error=${error}><input name="pricing.output_per_million" inputmode="decimal" placeholder="0.60" defaultValue=${decimalText(p.output_per_million)} /></${Field}>
      ${adding || m.kind === "chat" ? html`<${Field} name="pricing.cached_input_per_million" label="Cached input, USD per 1M" error=${error}>
        <input name="pricing.cached_input_per_million" inputmode="decimal" placeholder="input price" defaultValue=${decimalText(p.cached_input_per_million)} /></${Field}>
      <${Field} name="pricing.cache_write_per_million" label="Cache write, USD per 1M" error=${error}>
        <input name="pricing.cache_write_per_million" inputmode="decimal" placeholder="input price" defaultValue=${decimalText(p.cache_write_per_million)} /></${Field}>` : null}
      ${!adding && p.characters_per_million !== undefined ? html`<${Field} name="pricing.characters_per_million" label="Characters, USD per 1M" error=${error}>
        <input name="pricing.characters_per_million" inputmode="decimal" defaultValue=${decimalText(p.characters_per_million)} /></${Field}>` : null}
    </div>
    ${adding || m.kind === "chat" ? html`<div class="checks">
      <${Field} name="input_modalities" label="Images in" error=${error}><input type="checkbox" name="input_modalities.image" defaultChecked=${(m.input_modalities ?? []).includes("image")} /></${Field}>
      <${Field} name="turbo" label="Turbo tier" error=${error}><input type="checkbox" name="turbo" defaultChecked=${m.turbo === true} /></${Field}>
    </div>` : null}
    <div class="actions"><button type="submit" id="model-save">${adding ? "Add model" : "Save"}</button>
      <button type="button" class="secondary" onClick=${props.onCancel}>Cancel</button></div>
  </form>`;
}
