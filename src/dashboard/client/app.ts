/**
 * The page's top level: asks the server whether this browser has a session, then shows the
 * sign-in form, the account view or the operator view. A session that ends (expiry, a revoked
 * key, sign-out) brings back the sign-in form with the reason.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, ApiFailure, useSession, whenSignedOut, type SessionInfo } from "./api";
import { SignIn } from "./sign-in";
import { AccountView } from "./account-view";
import { OperatorView } from "./operator-view";

export function App() {
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [checked, setChecked] = useState(false);
  const [notice, setNotice] = useState("");

  const enter = (s: SessionInfo | null, message = "") => {
    useSession(s);
    setSession(s);
    setNotice(message);
  };

  useEffect(() => {
    whenSignedOut((message) => enter(null, message));
    api<SessionInfo | { kind: null; reason?: string }>("GET", "/session")
      .then((s) => (s.kind ? enter(s as SessionInfo) : enter(null, (s as { reason?: string }).reason ?? "")))
      .catch((e) => enter(null, e instanceof ApiFailure ? e.message : "The server could not be reached."))
      .finally(() => setChecked(true));
  }, []);

  // The page knows when the session expires: back to sign-in then, without waiting for a click.
  useEffect(() => {
    if (!session) return;
    const left = Date.parse(session.expires_at) - Date.now();
    const timer = setTimeout(() => enter(null, "Your session has expired. Sign in again."), Math.max(0, Math.min(left, 2 ** 31 - 1)));
    return () => clearTimeout(timer);
  }, [session]);

  const signOut = async () => {
    try {
      await api("DELETE", "/session");
    } finally {
      enter(null, "You are signed out.");
    }
  };

  if (!checked) return html`<main class="loading">Loading…</main>`;
  if (!session) return html`<${SignIn} notice=${notice} onSignedIn=${(s: SessionInfo) => enter(s)} />`;
  const View = session.kind === "account" ? AccountView : OperatorView;
  return html`<${View} session=${session} onSignOut=${signOut} />`;
}
