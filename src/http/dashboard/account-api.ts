/**
 * The account view's API (/dashboard/api/account/*), for a session signed in with an API key.
 * Every read is scoped to the session's account; every write is the same admin operation the
 * admin API and the CLI use, after checking the target belongs to that account. The playground
 * sends real requests through the normal endpoints with the session's key (see playground.ts).
 */
import type { App } from "../app";
import type { Services } from "../../services";
import { notFound } from "../../errors";
import { Admin } from "../../accounts/admin";
import { accountMoney } from "../../billing/account-spend";
import { usageReport } from "../../billing/usage-report";
import { dashboardHeaders } from "../../dashboard/assets";
import type { DashboardGuard } from "./guard";
import { registerPlayground } from "./playground";

const DAY_MS = 86_400_000;
export const SPEND_DAYS = 30;

export function registerAccountApi(app: App, s: Services, guard: DashboardGuard): void {
  const admin = new Admin(s);
  const accountOf = async (request: Request, set: { headers: Record<string, unknown> }) => {
    dashboardHeaders(set);
    return (await guard.session(request, "account")).accountId!;
  };

  app.get("/dashboard/api/account", async ({ request, set }) => {
    const accountId = await accountOf(request, set);
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
      s.generations.recent(accountId, 25),
    ]);
    return {
      account: { id: account.id, name: account.name },
      money,
      period: { start: byDay.start, end: byDay.end, totals: byDay.totals },
      by_day: byDay.rows,
      by_model: byModel.rows,
      by_day_model: byDayModel.rows,
      recent,
    };
  });

  app.get("/dashboard/api/account/generations/:id", async ({ request, set, params }) => {
    const accountId = await accountOf(request, set);
    const record = await s.generations.get(accountId, params.id);
    if (!record) throw notFound(`No request with id '${params.id}' for this account.`);
    return record;
  });

  app.get("/dashboard/api/account/keys", async ({ request, set }) => {
    const session = await guard.session(request, "account");
    dashboardHeaders(set);
    const keys = (await admin.listKeys(session.accountId!)).data;
    return { data: keys.map((k) => ({ ...k, current: k.id === session.keyId })) };
  });

  app.post("/dashboard/api/account/keys", async ({ request, set, body }) => {
    const accountId = await accountOf(request, set);
    set.status = 201;
    return admin.createKey(accountId, body ?? {});
  });

  app.delete("/dashboard/api/account/keys/:id", async ({ request, set, params }) => {
    const session = await guard.session(request, "account");
    dashboardHeaders(set);
    // Another account's key reads exactly like a key that does not exist.
    if (!(await s.keys.listForAccount(session.accountId!)).some((k) => k.id === params.id)) {
      throw notFound(`No API key with id '${params.id}' on this account.`);
    }
    const revoked = await admin.revokeKey(params.id);
    guard.sessions.destroyForKey(params.id);
    return { ...revoked, signed_out: params.id === session.keyId };
  });

  registerPlayground(app, s, guard);
}
