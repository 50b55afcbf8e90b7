/** One account in the operator view: credits (add or deduct, with a reason), state, limits, keys, ledger. */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { ErrorLine } from "./components";
import { usd, when } from "./format";
import { KeysPanel } from "./keys-panel";

export function AccountDetail(props: { id: string; onChanged: () => void }) {
  const [account, setAccount] = useState<any>(null);
  const [ledger, setLedger] = useState<any[]>([]);
  const [error, setError] = useState("");
  const [done, setDone] = useState("");
  const base = `/operator/accounts/${encodeURIComponent(props.id)}`;

  const load = async () => {
    const [list, entries] = await Promise.all([api("GET", "/operator/accounts"), api("GET", `${base}/ledger`)]);
    setAccount(list.data.find((a: any) => a.id === props.id) ?? null);
    setLedger(entries.data);
  };
  useEffect(() => {
    load().catch((e) => setError(e.message));
  }, [props.id]);

  const act = async (what: string, method: string, path: string, body: unknown) => {
    setError("");
    setDone("");
    try {
      await api(method, path, body);
      await load();
      props.onChanged();
      setDone(what);
      return true;
    } catch (err) {
      setError((err as Error).message);
      return false;
    }
  };

  const credits = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = form.elements;
    const amount = (f.namedItem("amount") as HTMLInputElement).value.trim();
    const deduct = (f.namedItem("direction") as HTMLSelectElement).value === "deduct";
    const reason = (f.namedItem("reason") as HTMLInputElement).value.trim();
    const signed = deduct ? (amount.startsWith("-") ? amount : `-${amount}`) : amount;
    if (await act(deduct ? "Credits deducted." : "Credits added.", "POST", `${base}/credits`, { amount: signed, reason })) form.reset();
  };

  const limits = async (e: Event) => {
    e.preventDefault();
    const f = (e.target as HTMLFormElement).elements;
    const value = (name: string) => {
      const v = (f.namedItem(name) as HTMLInputElement).value.trim();
      return v === "" ? null : Number(v);
    };
    await act("Limits saved.", "PATCH", base, { rate_limit_rpm: value("rpm"), concurrency_limit: value("concurrency") });
  };

  if (!account) return html`<${ErrorLine} error=${error} />`;
  return html`<section class="detail" id="account-detail" aria-label="Account detail">
    <h2>${account.name} <span class="muted small mono">${account.id}</span></h2>
    <p>Available <strong id="detail-available">${usd(account.available)}</strong> · reserved ${usd(account.reserved)} · balance ${usd(account.balance)}</p>
    <${ErrorLine} error=${error} />
    ${done ? html`<p class="ok" role="status">${done}</p>` : null}
    <div class="forms">
      <form class="stack" onSubmit=${credits} id="credits-form">
        <h3>Credits</h3>
        <label>Change <select name="direction"><option value="add">add</option><option value="deduct">deduct</option></select></label>
        <label>Amount, USD <input name="amount" required inputmode="decimal" placeholder="10.00" /></label>
        <label>Reason <input name="reason" required maxlength="500" placeholder="top-up, refund, …" /></label>
        <button type="submit">Apply</button>
      </form>
      <form class="stack" onSubmit=${limits} id="limits-form">
        <h3>Limits</h3>
        <label>Requests per minute <input name="rpm" inputmode="numeric" placeholder="default" value=${account.rate_limit_rpm} /></label>
        <label>Requests in flight <input name="concurrency" inputmode="numeric" placeholder="default" value=${account.concurrency_limit} /></label>
        <button type="submit">Save limits</button>
        <h3>State</h3>
        <button type="button" id="toggle-disabled" class=${account.disabled ? "secondary" : "danger"}
          onClick=${() => act(account.disabled ? "Account enabled." : "Account disabled.", "PATCH", base, { disabled: !account.disabled })}>
          ${account.disabled ? "Enable account" : "Disable account"}</button>
      </form>
    </div>
    <${KeysPanel} list=${`${base}/keys`} create=${`${base}/keys`} revoke=${(k: string) => `/operator/keys/${encodeURIComponent(k)}`} />
    <h3>Ledger (newest first)</h3>
    <div class="scroll"><table id="ledger">
      <thead><tr><th>Time (UTC)</th><th>Kind</th><th class="num">Amount</th><th class="num">Balance after</th><th>Model / reason</th><th>Request</th></tr></thead>
      <tbody>${ledger.map((e) => html`<tr>
        <td>${when(e.created_at)}</td><td>${e.kind}</td><td class="num">${usd(e.amount)}</td><td class="num">${usd(e.balance_after)}</td>
        <td>${e.kind === "charge" ? e.model : e.reason}</td><td class="mono small">${e.request_id ?? ""}</td></tr>`)}
      </tbody></table></div>
  </section>`;
}
