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
  const accountOf = (request: Request, set: { headers: Record<string, unknown> }) => {
    dashboardHeaders(set);
    return guard.session(request, "account").accountId!;
  };

  app.get("/dashboard/api/account", ({ request, set }) => {
    const accountId = accountOf(request, set);
    const account = s.accounts.mustGet(accountId);
    const now = Date.now();
    // The last 30 UTC days, today included: the same sums GET /v1/usage gives for that period.
    const endMs = Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;
    const period = { startMs: endMs - SPEND_DAYS * DAY_MS, endMs };
    const byDay = usageReport(s.db, accountId, { ...period, groupBy: ["day"] });
    const byModel = usageReport(s.db, accountId, { ...period, groupBy: ["model"] });
    const byDayModel = usageReport(s.db, accountId, { ...period, groupBy: ["day", "model"] });
    return {
      account: { id: account.id, name: account.name },
      money: accountMoney(s.db, accountId, now),
      period: { start: byDay.start, end: byDay.end, totals: byDay.totals },
      by_day: byDay.rows,
      by_model: byModel.rows,
      by_day_model: byDayModel.rows,
      recent: s.generations.recent(accountId, 25),
    };
  });

  app.get("/dashboard/api/account/generations/:id", ({ request, set, params }) => {
    const accountId = accountOf(request, set);
    const record = s.generations.get(accountId, params.id);
    if (!record) throw notFound(`No request with id '${params.id}' for this account.`);
    return record;
  });

  app.get("/dashboard/api/account/keys", ({ request, set }) => {
    const session = guard.session(request, "account");
    dashboardHeaders(set);
    const keys = admin.listKeys(session.accountId!).data;
    return { data: keys.map((k) => ({ ...k, current: k.id === session.keyId })) };
  });

  app.post("/dashboard/api/account/keys", ({ request, set, body }) => {
    const accountId = accountOf(request, set);
    set.status = 201;
    return admin.createKey(accountId, body ?? {});
  });

  app.delete("/dashboard/api/account/keys/:id", ({ request, set, params }) => {
    const session = guard.session(request, "account");
    dashboardHeaders(set);
    // Another account's key reads exactly like a key that does not exist.
    if (!s.keys.listForAccount(session.accountId!).some((k) => k.id === params.id)) {
      throw notFound(`No API key with id '${params.id}' on this account.`);
    }
    const revoked = admin.revokeKey(params.id);
    guard.sessions.destroyForKey(params.id);
    return { ...revoked, signed_out: params.id === session.keyId };
  });

  registerPlayground(app, s, guard);
}
