/**
 * The operator view: the revenue overview, every account with its balance and spend, creating
 * accounts, and one account's credits, state, limits, keys and ledger; the request log; models,
 * prices and routes; the service's state and the last hour's charts; how to connect.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, type SessionInfo } from "./api";
import { ErrorLine, Tabs, TopBar } from "./components";
import { usd } from "./format";
import { AccountDetail } from "./operator-account";
import { ServicePanel } from "./service-panel";
import { OperatorOverview } from "./operator-overview";
import { RequestLog } from "./request-log";
import { ModelsPage } from "./models-page";
import { ConnectPanel } from "./connect-panel";

const TABS: [string, string][] = [["overview", "Overview"], ["accounts", "Accounts"], ["requests", "Requests"], ["models", "Models"], ["service", "Service"], ["connect", "Connect"]];

export function OperatorView(props: { session: SessionInfo; onSignOut: () => void }) {
  const [tab, setTab] = useState("overview");
  const [account, setAccount] = useState<string | null>(null);
  const openAccount = (id: string) => (setAccount(id), setTab("accounts"));
  return html`<div class="page">
    <${TopBar} title="Operator" onSignOut=${props.onSignOut} />
    <${Tabs} tabs=${TABS} current=${tab} onPick=${setTab} />
    ${tab === "overview" ? html`<${OperatorOverview} onAccount=${openAccount} />` : null}
    ${tab === "accounts" ? html`<${Accounts} initial=${account} />` : null}
    ${tab === "requests" ? html`<${RequestLog} />` : null}
    ${tab === "models" ? html`<${ModelsPage} />` : null}
    ${tab === "service" ? html`<${ServicePanel} />` : null}
    ${tab === "connect" ? html`<${ConnectPanel} />` : null}
  </div>`;
}

function Accounts(props: { initial: string | null }) {
  const [accounts, setAccounts] = useState<any[] | null>(null);
  const [selected, setSelected] = useState<string | null>(props.initial);
  const [error, setError] = useState("");

  const load = () => api("GET", "/operator/accounts").then((r) => setAccounts(r.data), (e) => setError(e.message));
  useEffect(() => {
    load();
  }, []);

  const create = async (e: Event) => {
    e.preventDefault();
    const f = (e.target as HTMLFormElement).elements;
    const name = (f.namedItem("name") as HTMLInputElement).value.trim();
    const credits = (f.namedItem("credits") as HTMLInputElement).value.trim();
    setError("");
    try {
      const acct = await api("POST", "/operator/accounts", credits ? { name, credits } : { name });
      (e.target as HTMLFormElement).reset();
      await load();
      setSelected(acct.id);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return html`<section aria-label="Accounts">
    <h2>Accounts</h2>
    <form class="inline" onSubmit=${create} id="create-account">
      <input name="name" placeholder="name" required maxlength="200" />
      <input name="credits" placeholder="credits, USD (optional)" inputmode="decimal" />
      <button type="submit">Create account</button>
    </form>
    <${ErrorLine} error=${error} />
    <div class="scroll"><table id="accounts">
      <thead><tr><th>Name</th><th>Id</th><th class="num">Available</th><th class="num">Reserved</th><th class="num">Balance</th><th class="num">Spent, 30 days</th><th>State</th><th class="num">Req/min</th><th class="num">In flight max</th></tr></thead>
      <tbody>${(accounts ?? []).map((a) => html`<tr data-account-id=${a.id} class=${a.id === selected ? "selected" : ""} onClick=${() => setSelected(a.id)}>
        <td><a href=${"#" + a.id} onClick=${(e: Event) => e.preventDefault()}>${a.name}</a></td><td class="mono small">${a.id}</td>
        <td class="num">${usd(a.available)}</td><td class="num">${usd(a.reserved)}</td><td class="num">${usd(a.balance)}</td><td class="num">${usd(a.spend_30_days)}</td>
        <td class=${a.disabled ? "error" : "ok"}>${a.disabled ? "disabled" : "active"}</td>
        <td class="num">${a.rate_limit_rpm}</td><td class="num">${a.concurrency_limit}</td></tr>`)}
      </tbody></table></div>
    ${selected ? html`<${AccountDetail} key=${selected} id=${selected} onChanged=${load} />` : html`<p class="muted">Pick an account to add credits, change its limits or read its ledger.</p>`}
  </section>`;
}
