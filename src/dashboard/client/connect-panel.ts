/**
 * How to connect (accounts and operators): the base URL clients use and a chat request in curl,
 * Python and JavaScript for a live model. The key is only written into the snippets if the user
 * pastes it here (it stays in this page; nothing is sent).
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { CodeView } from "./code-view";
import { liveModels } from "./live-models";

export function ConnectPanel() {
  const [base, setBase] = useState("");
  const [models, setModels] = useState<string[]>([]);
  const [model, setModel] = useState("");
  const [key, setKey] = useState("");
  const [error, setError] = useState("");

  useEffect(() => {
    api("GET", "/connect").then((c) => setBase(c.base_url), (e) => setError(e.message));
    liveModels().then((m) => {
      setModels(m.chat);
      setModel(m.chat[0] ?? "");
    }, () => setError("Could not read the model list."));
  }, []);

  return html`<section aria-label="Connect" id="connect">
    <h2>Connect</h2>
    <p>Any OpenAI-compatible client works: point it at this base URL and send an API key as a Bearer token.</p>
    <${ErrorLine} error=${error} />
    <p>Base URL <code id="connect-base-url" class="secret">${base || "…"}</code></p>
    <div class="forms">
      <label>Model <select id="connect-model" value=${model} onChange=${(e: Event) => setModel((e.target as HTMLSelectElement).value)}>
        ${models.map((m) => html`<option value=${m}>${m}</option>`)}</select></label>
      <label>API key (optional: fills it into the code; stays in this page) <input id="connect-key" type="password" autocomplete="off" value=${key}
        onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value.trim())} placeholder="sy-…" /></label>
    </div>
    ${models.length === 0 ? html`<p class="muted">No chat model is live on this server right now.</p>` : null}
    ${base ? html`<${CodeView} id="connect-code" input=${{ baseUrl: base, model: model || "MODEL", messages: [{ role: "user", content: "Hello!" }], key: key || undefined }} />` : null}
  </section>`;
}
