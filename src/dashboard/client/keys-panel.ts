/**
 * API keys of one account: the list (prefixes only), creating one (its key is shown once, here,
 * and never again) and revoking one. Used by the account view (its own keys) and the operator view.
 * When the list answers `manage: false` (an account session whose key has controls: docs/operate.md, "The
 * dashboard") it lists that key alone, read-only: no form or button that could only fail.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { usd, when } from "./format";

/** A key's own controls in one cell: its spend limit (used of limit, reset), expiry, models, rate. */
function controls(k: any): string {
  const parts: string[] = [];
  if (k.limit !== null && k.limit !== undefined) parts.push(`${usd(k.limit - (k.limit_remaining ?? 0))} of ${usd(k.limit)}${k.limit_reset ? ` ${k.limit_reset}` : ""}`);
  if (k.expires_at) parts.push(`${k.expired ? "expired" : "expires"} ${when(k.expires_at)}`);
  if (k.models) parts.push(k.models.join(", "));
  if (k.rate_limit_rpm) parts.push(`${k.rate_limit_rpm}/min`);
  return parts.length ? parts.join(" · ") : "none";
}

export function KeysPanel(props: { list: string; create: string; revoke: (id: string) => string }) {
  const [keys, setKeys] = useState<any[] | null>(null);
  const [manage, setManage] = useState(true);
  const [created, setCreated] = useState<any>(null);
  const [confirming, setConfirming] = useState("");
  const [error, setError] = useState("");

  const load = () =>
    api("GET", props.list).then(
      (r) => {
        setKeys(r.data);
        setManage(r.manage !== false);
      },
      (e) => setError(e.message),
    );
  useEffect(() => {
    setCreated(null);
    load();
  }, [props.list]);

  const create = async (e: Event) => {
    e.preventDefault();
    const input = (e.target as HTMLFormElement).elements.namedItem("key-name") as HTMLInputElement;
    setError("");
    try {
      setCreated(await api("POST", props.create, input.value.trim() ? { name: input.value.trim() } : {}));
      input.value = "";
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const revoke = async (id: string) => {
    if (confirming !== id) return setConfirming(id);
    setConfirming("");
    setError("");
    try {
      await api("DELETE", props.revoke(id));
      await load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return html`<section class="keys" aria-label="API keys">
    <h2>API keys</h2>
    ${manage ? html`<form class="inline" onSubmit=${create}>
      <input name="key-name" id="key-name" placeholder="name (optional)" maxlength="200" />
      <button type="submit" id="create-key">Create key</button>
    </form>` : html`<p class="notice" id="keys-read-only">This session signed in with a key that has its own limits, so it shows that key only.
      Creating and revoking keys takes a key without a limit, expiry, model list or rate limit.</p>`}
    ${created ? html`<div class="notice" id="new-key-box">
      <p>New key <strong>${created.name ?? created.prefix}</strong>: copy it now, it is not shown again.</p>
      <code class="secret" id="new-key">${created.key}</code>
      <button class="link" onClick=${() => navigator.clipboard?.writeText(created.key)}>copy</button>
      <button class="link" onClick=${() => setCreated(null)}>done</button>
    </div>` : null}
    <${ErrorLine} error=${error} />
    <div class="scroll"><table id="keys">
      <thead><tr><th>Key</th><th>Name</th><th>Created (UTC)</th><th>State</th><th>Limits</th><th></th></tr></thead>
      <tbody>${(keys ?? []).map((k) => html`<tr data-key-id=${k.id}>
        <td class="mono">${k.prefix}…</td><td>${k.name ?? ""}${k.current ? html` <span class="tag">this session</span>` : null}</td>
        <td>${when(k.created_at)}</td><td class=${k.revoked ? "muted" : "ok"}>${k.revoked ? "revoked" : "active"}</td><td class="key-controls">${controls(k)}</td>
        <td>${k.revoked || !manage ? null : html`<button class=${confirming === k.id ? "danger" : "secondary"} data-revoke=${k.id} onClick=${() => revoke(k.id)}>${confirming === k.id ? "Confirm revoke" : "Revoke"}</button>`}</td>
      </tr>`)}</tbody>
    </table></div>
  </section>`;
}
