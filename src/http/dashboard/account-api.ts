/**
 * The account view's API (/dashboard/api/account/*), for a session signed in with an API key.
 * Every read is scoped to the session's account; every write is the same admin operation the
 * admin API and the CLI use, after checking the target belongs to that account. The playground
 * sends real requests through the normal endpoints with the session's key (see playground.ts).
 *
 * A session reaches what its key reaches (docs/operate.md, "The dashboard"): a key without controls
 * manages the account's keys; a key with any control reads the account's usage (as its GET
 * /v1/usage does), its own requests and its own key, and never creates or revokes a key.
 */
import type { App } from "../route-module";
import { notFound } from "../../errors";
import { Admin, type AdminDeps } from "../../accounts/admin";
import { accountMoney } from "../../billing/account-spend";
import { usageReport, type UsageRecords } from "../../billing/usage-report";
import { dashboardHeaders } from "../../dashboard/assets";
import { managesKeys } from "../../accounts/key-controls";
import { logRowView, type RequestLogRecords } from "../../generations/request-log";
import type { GenerationRecords } from "../../generations/records";
import type { DashboardGuard } from "./guard";
import { registerPlayground } from "./playground";

const DAY_MS = 86_400_000;
/** Requests listed under "Recent requests". */
const RECENT = 25;
export const SPEND_DAYS = 30;

/** What the account view reads and does: administration of its keys, its usage and money, and its requests. */
export interface AccountApiDeps extends AdminDeps {
  usage: UsageRecords;
  generations: Pick<GenerationRecords, "recent" | "get">;
  store: { reports: RequestLogRecords };
}

export function registerAccountApi(app: App, s: AccountApiDeps, guard: DashboardGuard): void {
  const admin = new Admin(s);
  app.get("/dashboard/api/account", async ({ request, set }) => {
    dashboardHeaders(set);
    const { accountId, keyId, owner } = await guard.account(request);
    const manager = managesKeys(owner.key);
    const account = await s.accounts.mustGet(accountId);
    const now = Date.now();
    // The last 30 UTC days, today included: the same sums GET /v1/usage gives for that period.
    const endMs = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
    const period = { startMs: endMs - SPEND_DAYS * DAY_MS, endMs };
    const [byDay, byModel, byDayModel, money, recent] = await Promise.all([
      usageReport(s.usage, accountId, { ...period, groupBy: ["day"] }),
      usageReport(s.usage, accountId, { ...period, groupBy: ["model"] }),
      usageReport(s.usage, accountId, { ...period, groupBy: ["day", "model"] }),
      accountMoney(s.usage, accountId, now),
      // A key with controls lists only its own requests (with failed ones, cost 0).
      manager ? s.generations.recent(accountId, RECENT) : s.store.reports.requestLog({ accountId, keyId, limit: RECENT }).then((rows) => rows.map(logRowView)),
    ]);
    return {
      account: { id: account.id, name: account.name },
      money,
      period: { start: byDay.start, end: byDay.end, totals: byDay.totals },
      by_day: byDay.rows,
      by_model: byModel.rows,
      by_day_model: byDayModel.rows,
      recent,
      recent_scope: manager ? "account" : "key",
    };
  });

  app.get("/dashboard/api/account/generations/:id", async ({ request, set, params }) => {
    dashboardHeaders(set);
    const accountId = (await guard.session(request, "account")).accountId!;
    const record = await s.generations.get(accountId, params.id);
    if (!record) throw notFound(`No request with id '${params.id}' for this account.`);
    return record;
  });

  // `manage`: whether this session may create and revoke keys; without it, only its own key is listed.
  app.get("/dashboard/api/account/keys", async ({ request, set }) => {
    dashboardHeaders(set);
    const { accountId, keyId, owner } = await guard.account(request);
    const manage = managesKeys(owner.key);
    const keys = (await admin.listKeys(accountId)).data.filter((k) => manage || k.id === keyId);
    return { data: keys.map((k) => ({ ...k, current: k.id === keyId })), manage };
  });

  app.post("/dashboard/api/account/keys", async ({ request, set, body }) => {
    dashboardHeaders(set);
    const { accountId } = await guard.keyManager(request);
    set.status = 201;
    return admin.createKey(accountId, body ?? {});
  });

  app.delete("/dashboard/api/account/keys/:id", async ({ request, set, params }) => {
    dashboardHeaders(set);
    const { accountId, keyId } = await guard.keyManager(request);
    // Another account's key reads exactly like a key that does not exist.
    if (!(await s.keys.listForAccount(accountId)).some((k) => k.id === params.id)) {
      throw notFound(`No API key with id '${params.id}' on this account.`);
    }
    const revoked = await admin.revokeKey(params.id);
    guard.sessions.destroyForKey(params.id);
    return { ...revoked, signed_out: params.id === keyId };
  });

  registerPlayground(app, guard);
}
