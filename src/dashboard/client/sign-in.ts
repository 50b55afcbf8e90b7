/**
 * Sign-in: an API key opens the account view, the admin token the operator view. The secret is
 * sent once to exchange it for a session cookie and is then cleared from the form and from memory.
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { api, ApiFailure, type SessionInfo } from "./api";

export function SignIn(props: { notice: string; onSignedIn: (s: SessionInfo) => void }) {
  const [kind, setKind] = useState<"account" | "operator">("account");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const input = form.elements.namedItem("secret") as HTMLInputElement;
    const secret = input.value;
    input.value = "";
    setBusy(true);
    setError("");
    try {
      props.onSignedIn(await api<SessionInfo>("POST", "/session", { kind, secret }));
    } catch (err) {
      setError(err instanceof ApiFailure ? err.message : "The server could not be reached.");
    } finally {
      setBusy(false);
    }
  };

  return html`<main class="sign-in">
    <h1>Switchyard</h1>
    <p class="muted">Sign in with an API key to see your balance, usage and keys, or with the admin token to run the service.</p>
    ${props.notice ? html`<p class="notice" id="sign-in-notice">${props.notice}</p>` : null}
    <form onSubmit=${submit} autocomplete="off">
      <fieldset class="choice">
        <label><input type="radio" name="kind" value="account" checked=${kind === "account"} onChange=${() => setKind("account")} /> API key</label>
        <label><input type="radio" name="kind" id="kind-operator" value="operator" checked=${kind === "operator"} onChange=${() => setKind("operator")} /> Admin token</label>
      </fieldset>
      <label for="secret">${kind === "account" ? "API key (sy-…)" : "Admin token"}</label>
      <input id="secret" name="secret" type="password" required autocomplete="off" spellcheck=${false} />
      <button id="sign-in" type="submit" disabled=${busy}>${busy ? "Signing in…" : "Sign in"}</button>
      ${error ? html`<p class="error" role="alert" id="sign-in-error">${error}</p>` : null}
    </form>
  </main>`;
}
