/**
 * Self-service endpoints shaped like OpenRouter's, so tools written for them (menu-bar meters,
 * spend dashboards) work with the base address set to ours: GET /v1/key, GET /v1/credits and
 * GET /v1/generation?id=. Key auth, free, no rate consumed (like /v1/usage). Every figure is a
 * sum of the caller's ledger entries; how the prepaid balance maps to OpenRouter's `limit`
 * fields is in the README ("Self-service endpoints").
 */
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { identify } from "../auth";
import { DomainError, invalidField, missingField, notFound } from "../../errors";
import { accountMoney } from "../../billing/account-spend";
import { accountView } from "../../accounts/accounts";

export function registerSelfServiceRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/v1/key", summary: "The calling key and its account's money, shaped like OpenRouter's GET /api/v1/key (limit = credits added, limit_remaining = available balance).", auth: "key", public: true });
  docs.add({ method: "GET", path: "/v1/credits", summary: "Credits added and spent, all time, shaped like OpenRouter's GET /api/v1/credits.", auth: "key", public: true });
  docs.add({ method: "GET", path: "/v1/generation", summary: "One of your requests by id (query id=req_…): model, endpoint, time, latency, tokens or characters, tier, cost, status.", auth: "key", public: true });

  app.get("/v1/key", ({ bearer, request, set }) => {
    const caller = identify(s, request, bearer, set);
    noQuery(request.url, "/v1/key");
    const money = mustMoney(s, caller.accountId);
    const key = s.keys.listForAccount(caller.accountId).find((k) => k.id === caller.keyId);
    const account = accountView(s.accounts.mustGet(caller.accountId), s.config);
    return {
      data: {
        label: key?.name || `${key?.prefix ?? ""}…`,
        limit: money.credited,
        limit_remaining: money.available,
        limit_reset: null,
        include_byok_in_limit: false,
        usage: money.spend.total,
        usage_daily: money.spend.day,
        usage_weekly: money.spend.week,
        usage_monthly: money.spend.month,
        byok_usage: 0,
        byok_usage_daily: 0,
        byok_usage_weekly: 0,
        byok_usage_monthly: 0,
        is_free_tier: false,
        is_provisioning_key: false,
        is_management_key: false,
        rate_limit: { requests: account.rate_limit_rpm, interval: "1m" },
        expires_at: null,
        creator_user_id: caller.accountId,
      },
    };
  });

  app.get("/v1/credits", ({ bearer, request, set }) => {
    const caller = identify(s, request, bearer, set);
    noQuery(request.url, "/v1/credits");
    const money = mustMoney(s, caller.accountId);
    return { data: { total_credits: money.credited, total_usage: money.spend.total } };
  });

  app.get("/v1/generation", ({ bearer, request, set }) => {
    const caller = identify(s, request, bearer, set);
    const params = new URL(request.url).searchParams;
    for (const name of params.keys()) if (name !== "id") throw invalidField(name, "is not a query parameter of /v1/generation (use id)");
    const ids = params.getAll("id");
    if (ids.length === 0 || ids[0]!.trim() === "") throw missingField("id");
    if (ids.length > 1) throw invalidField("id", "may be given once");
    const id = ids[0]!.trim();
    const record = s.generations.get(caller.accountId, id);
    if (!record) throw new DomainError("not_found", "not_found", `No generation with id '${id}' for this account. Ids are the x-request-id of your own requests.`, "id");
    return { data: record };
  });
}

function mustMoney(s: Services, accountId: string) {
  const money = accountMoney(s.db, accountId);
  if (!money) throw notFound("The account of this key no longer exists.");
  return money;
}

function noQuery(url: string, path: string): void {
  for (const name of new URL(url).searchParams.keys()) throw invalidField(name, `is not a query parameter of ${path} (it takes none)`);
}
