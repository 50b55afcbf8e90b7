/**
 * Self-service endpoints shaped like OpenRouter's, so tools written for them (menu-bar meters,
 * spend dashboards) work with the base address set to ours: GET /v1/key, GET /v1/credits and
 * GET /v1/generation?id=. Key auth, free, no rate consumed (like /v1/usage). Every figure is a
 * sum of the caller's ledger entries; how the prepaid balance maps to OpenRouter's `limit`
 * fields is in docs/protocols.md ("Self-service endpoints").
 */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { identify, type KeyIdentityDeps } from "../auth";
import { DomainError, invalidField, missingField, notFound } from "../../errors";
import { accountMoney } from "../../billing/account-spend";
import { accountView, type Accounts, type LimitDefaults } from "../../accounts/accounts";
import type { ApiKeyListing, ApiKeys } from "../../accounts/api-keys";
import type { UsageRecords } from "../../billing/usage-report";
import type { GenerationRecords } from "../../generations/records";
import { keyControlsView, limitRemaining, spentThisPeriod } from "../../accounts/key-controls";
import { periodStarts } from "../../billing/key-periods";
import { usdNumber } from "../../billing/money";

/** What the self-service endpoints read: the caller's key and account, their money, and generation records. */
export interface SelfServiceDeps extends KeyIdentityDeps {
  keys: ApiKeys;
  accounts: Pick<Accounts, "mustGet">;
  usage: UsageRecords;
  generations: Pick<GenerationRecords, "get">;
  config: KeyIdentityDeps["config"] & LimitDefaults;
}

export function registerSelfServiceRoutes(app: App, s: SelfServiceDeps, docs: RouteDocs): void {
  docs.add({ method: "GET", path: "/v1/key", summary: "The calling key and its money, shaped like OpenRouter's GET /api/v1/key: a key with a spend limit reports its limit, what is left of it and its usage; otherwise limit = credits added, limit_remaining = available balance.", auth: "key", public: true });
  docs.add({ method: "GET", path: "/v1/credits", summary: "Credits added and spent, all time, shaped like OpenRouter's GET /api/v1/credits.", auth: "key", public: true });
  docs.add({ method: "GET", path: "/v1/generation", summary: "One of your requests by id (query id=req_…): model, endpoint, time, latency, tokens or characters, tier, cost, status.", auth: "key", public: true });

  app.get("/v1/key", async ({ bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    noQuery(request.url, "/v1/key");
    const money = await mustMoney(s, caller.accountId);
    const key = await s.keys.get(caller.keyId);
    const row = await s.accounts.mustGet(caller.accountId);
    const account = accountView(row, s.config);
    const rpm = caller.key.rateLimitRpm === null ? account.rate_limit_rpm : Math.min(caller.key.rateLimitRpm, account.rate_limit_rpm);
    // A key with its own spend limit reports the key's figures (docs/operate.md, "Keys: limits, expiry,
    // models"); otherwise the account's money, as before.
    const own = key && key.spend_limit !== null ? await keyFigures(s, key, row.balance - row.reserved) : null;
    return {
      data: {
        label: key?.name || `${key?.prefix ?? ""}…`,
        limit: own ? own.limit : money.credited,
        limit_remaining: own ? own.limit_remaining : money.available,
        limit_reset: own ? own.limit_reset : null,
        include_byok_in_limit: false,
        usage: own ? own.usage : money.spend.total,
        usage_daily: own ? own.usage_daily : money.spend.day,
        usage_weekly: own ? own.usage_weekly : money.spend.week,
        usage_monthly: own ? own.usage_monthly : money.spend.month,
        byok_usage: 0,
        byok_usage_daily: 0,
        byok_usage_weekly: 0,
        byok_usage_monthly: 0,
        is_free_tier: false,
        is_provisioning_key: false,
        is_management_key: false,
        rate_limit: { requests: rpm, interval: "1m" },
        expires_at: key?.expires_at == null ? null : new Date(key.expires_at * 1000).toISOString(),
        creator_user_id: caller.accountId,
      },
    };
  });

  app.get("/v1/credits", async ({ bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    noQuery(request.url, "/v1/credits");
    const money = await mustMoney(s, caller.accountId);
    return { data: { total_credits: money.credited, total_usage: money.spend.total } };
  });

  app.get("/v1/generation", async ({ bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    const params = new URL(request.url).searchParams;
    for (const name of params.keys()) if (name !== "id") throw invalidField(name, "is not a query parameter of /v1/generation (use id)");
    const ids = params.getAll("id");
    if (ids.length === 0 || ids[0]!.trim() === "") throw missingField("id");
    if (ids.length > 1) throw invalidField("id", "may be given once");
    const id = ids[0]!.trim();
    const record = await s.generations.get(caller.accountId, id);
    if (!record) throw new DomainError("not_found", "not_found", `No generation with id '${id}' for this account. Ids are the x-request-id of your own requests.`, "id");
    return { data: record };
  });
}

/**
 * A limited key's own figures in USD: its limit, what is left (never more than the account has),
 * its usage. The usage of the period its limit resets on is what the limit counts (its stored
 * period's spend); the other periods sum its charges by when they count (counted_at), the same
 * attribution — so usage never shows more than the limit allowed.
 */
async function keyFigures(s: Pick<SelfServiceDeps, "keys">, key: ApiKeyListing, accountAvailableUnits: number) {
  const now = Date.now();
  const view = keyControlsView(key, now);
  const usage = await s.keys.usageSince(key.id, periodStarts(now));
  const own = spentThisPeriod(key, now);
  const reset = key.limit_reset;
  return {
    limit: view.limit,
    limit_remaining: usdNumber(Math.min(limitRemaining(key, now) ?? 0, accountAvailableUnits)),
    limit_reset: view.limit_reset,
    usage: view.usage,
    usage_daily: usdNumber(reset === "daily" ? own : usage.day),
    usage_weekly: usdNumber(reset === "weekly" ? own : usage.week),
    usage_monthly: usdNumber(reset === "monthly" ? own : usage.month),
  };
}

async function mustMoney(s: Pick<SelfServiceDeps, "usage">, accountId: string) {
  const money = await accountMoney(s.usage, accountId);
  if (!money) throw notFound("The account of this key no longer exists.");
  return money;
}

function noQuery(url: string, path: string): void {
  for (const name of new URL(url).searchParams.keys()) throw invalidField(name, `is not a query parameter of ${path} (it takes none)`);
}
