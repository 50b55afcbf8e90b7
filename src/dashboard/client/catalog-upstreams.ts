/**
 * The operator's upstreams (docs/live-config.md): each with where it comes from (env, file, admin),
 * its base URL, whether it has a key, its timeouts and keep-alive; adding one, editing one, and
 * removing one written here. The key is write-only: its input is never prefilled and the server
 * never sends it back (`has_key` only); left empty on an edit, the key is kept.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { checked, Field, FormErrorLine, useFormError, value, whole, useShownOnOpen } from "./field-form";

const FIELDS = ["name", "base_url", "key", "timeouts", "keep_alive"];
const TIMEOUTS = [["connect_ms", "Connect timeout, ms"], ["first_byte_ms", "First byte timeout, ms"], ["idle_ms", "Idle timeout, ms"]] as const;

export function Upstreams(props: { version: number; onChanged: () => void }) {
  const [upstreams, setUpstreams] = useState<any[] | null>(null);
  const [editing, setEditing] = useState<any | null>(null);
  const [error, setError] = useState("");
  const [done, setDone] = useState("");
  useEffect(() => {
    api("GET", "/operator/catalog/upstreams").then((r) => setUpstreams(r.data), (e) => setError(e.message));
  }, [props.version]);

  const remove = async (name: string) => {
    setError("");
    setDone("");
    try {
      await api("DELETE", `/operator/catalog/upstreams/${encodeURIComponent(name)}`);
      setDone(`Upstream ${name} removed.`);
      props.onChanged();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const saved = (what: string) => (setEditing(null), setDone(what), props.onChanged());

  return html`<section aria-label="Upstreams">
    <h2>Upstreams <button id="upstream-add" onClick=${() => (setDone(""), setEditing({}))}>Add an upstream</button></h2>
    <${ErrorLine} error=${error} />
    ${done ? html`<p class="ok" role="status" id="upstreams-done">${done}</p>` : null}
    ${editing ? html`<${UpstreamEditor} key=${editing.name ?? "new"} upstream=${editing} onSaved=${saved} onCancel=${() => setEditing(null)} />` : null}
    <div class="scroll"><table id="upstreams">
      <thead><tr><th>Name</th><th>Source</th><th>Base URL</th><th>Key</th><th class="num">Connect</th><th class="num">First byte</th><th class="num">Idle</th><th>Keep-alive</th><th>Change</th></tr></thead>
      <tbody>${(upstreams ?? []).map((u) => html`<tr data-upstream=${u.name}>
        <td>${u.name}</td><td>${u.source}</td><td class="mono small">${u.base_url ?? "—"}</td><td>${u.has_key ? "set" : "—"}</td>
        ${TIMEOUTS.map(([k]) => html`<td class="num">${u.timeouts ? `${u.timeouts[k]} ms` : "—"}</td>`)}
        <td>${u.keep_alive === null ? "—" : u.keep_alive ? "yes" : "no"}</td>
        <td><div class="row-actions">${u.source === "env" ? html`<span class="muted small">SWITCHYARD_UPSTREAM_URL</span>` : html`
          <button class="secondary upstream-edit" onClick=${() => (setDone(""), setEditing(u))}>Edit</button>
          ${u.source === "admin" ? html`<button class="secondary upstream-remove" onClick=${() => remove(u.name)}>Remove</button>` : null}`}</div></td></tr>`)}
      </tbody></table></div>
  </section>`;
}

function UpstreamEditor(props: { upstream: any; onSaved: (what: string) => void; onCancel: () => void }) {
  const u = props.upstream;
  const adding = u.name === undefined;
  const { error, setError, fail } = useFormError();
  const ref = useShownOnOpen();

  const submit = async (e: Event) => {
    e.preventDefault();
    const f = e.target as HTMLFormElement;
    setError(null);
    const timeouts: Record<string, number | string> = {};
    for (const [k] of TIMEOUTS) {
      const v = value(f, `timeouts.${k}`);
      if (v !== "") timeouts[k] = whole(v);
    }
    const key = (f.elements.namedItem("key") as HTMLInputElement).value;
    const body: Record<string, unknown> = {
      base_url: value(f, "base_url"),
      keep_alive: checked(f, "keep_alive"),
      ...(Object.keys(timeouts).length > 0 ? { timeouts } : {}),
      ...(key !== "" ? { key } : checked(f, "remove_key") ? { key: null } : {}),
    };
    try {
      if (adding) {
        const name = value(f, "name");
        await api("POST", "/operator/catalog/upstreams", { name, ...body });
        props.onSaved(`Upstream ${name} added.`);
      } else {
        await api("PATCH", `/operator/catalog/upstreams/${encodeURIComponent(u.name)}`, body);
        props.onSaved(`Upstream ${u.name} saved.`);
      }
    } catch (err) {
      fail(err);
    }
  };

  return html`<form class="editor" id="upstream-form" ref=${ref} onSubmit=${submit} autocomplete="off">
    <h3>${adding ? "Add an upstream" : html`Edit upstream <span class="mono">${u.name}</span>`}</h3>
    ${!adding && u.source === "file" ? html`<p class="muted small">Saving writes a live copy that replaces the routes file's entry; give its key again.</p>` : null}
    <${FormErrorLine} error=${error} names=${FIELDS} />
    <div class="grid">
      ${adding ? html`<${Field} name="name" label="Name" error=${error}><input name="name" required maxlength="64" placeholder="engine-b" /></${Field}>` : null}
      <${Field} name="base_url" label="Base URL" error=${error}><input name="base_url" required placeholder="http://10.0.0.5:8000/v1" defaultValue=${u.base_url ?? ""} /></${Field}>
      <${Field} name="key" label=${u.has_key ? "Key (set; empty keeps it)" : "Key (optional)"} error=${error}>
        <input name="key" type="password" autocomplete="new-password" placeholder=${u.has_key ? "unchanged" : "none"} /></${Field}>
      ${TIMEOUTS.map(([k, label]) => html`<${Field} name=${`timeouts.${k}`} label=${label} error=${error}>
        <input name=${`timeouts.${k}`} inputmode="numeric" placeholder="default" defaultValue=${u.timeouts?.[k] ?? ""} /></${Field}>`)}
    </div>
    <div class="checks">
      <${Field} name="keep_alive" label="Keep-alive" error=${error}><input type="checkbox" name="keep_alive" defaultChecked=${u.keep_alive !== false} /></${Field}>
      ${!adding && u.has_key ? html`<label><input type="checkbox" name="remove_key" /> Remove the key</label>` : null}
    </div>
    <div class="actions"><button type="submit" id="upstream-save">${adding ? "Add upstream" : "Save"}</button>
      <button type="button" class="secondary" onClick=${props.onCancel}>Cancel</button></div>
  </form>`;
}
