/**
 * The operator view's API (/dashboard/api/operator/*), for a session signed in with the admin
 * token. Each write is the admin operation the admin API and the CLI run (accounts/admin.ts), so
 * the three can never disagree; service state and the metric history are read-only.
 */
import type { App } from "../route-module";
import { Admin, type AdminDeps } from "../../accounts/admin";
import { dashboardHeaders } from "../../dashboard/assets";
import type { DashboardGuard } from "./guard";
import { serviceState, type ServiceStateSources } from "../../dashboard/service-state";
import { MetricsHistory } from "../../dashboard/metrics-history";
import { requestMetrics } from "../../metrics/request-metrics";
import { LATENCY_BUCKETS, type MetricsRegistry } from "../../metrics/registry";
import { spendByAccount, type RevenueRecords } from "../../billing/revenue";
import { usdNumber } from "../../billing/money";

const LEDGER_ROWS = 200;
const SPEND_DAYS = 30;

/** What the operator's accounts and service pages use: administration, spend, the service's state and the request metrics. */
export type OperatorApiDeps = AdminDeps & ServiceStateSources & {
  store: { reports: RevenueRecords };
  metrics: MetricsRegistry;
};

export function registerOperatorApi(app: App, s: OperatorApiDeps, guard: DashboardGuard): void {
  const admin = new Admin(s);
  const history = metricsHistoryOf(s.metrics);
  // Sampling runs while the server does: started when it listens, stopped when it stops.
  app.onStart(() => history.start());
  app.onStop(() => history.stop());

  const operator = async (request: Request, set: { headers: Record<string, unknown> }) => {
    dashboardHeaders(set);
    await guard.session(request, "operator");
  };

  // Each account with its spend over the last 30 UTC days (today included), from the ledger.
  app.get("/dashboard/api/operator/accounts", async ({ request, set }) => {
    await operator(request, set);
    const [list, spend] = await Promise.all([admin.listAccounts(), spendByAccount(s.store.reports, SPEND_DAYS)]);
    return { ...list, data: list.data.map((a) => ({ ...a, spend_30_days: usdNumber(spend.get(a.id) ?? 0) })) };
  });
  app.post("/dashboard/api/operator/accounts", async ({ request, set, body }) => {
    await operator(request, set);
    set.status = 201;
    return admin.createAccount(body);
  });
  app.patch("/dashboard/api/operator/accounts/:id", async ({ request, set, params, body }) => (await operator(request, set), admin.patchAccount(params.id, body)));
  app.post("/dashboard/api/operator/accounts/:id/credits", async ({ request, set, params, body }) => (await operator(request, set), admin.adjustCredits(params.id, body)));
  app.get("/dashboard/api/operator/accounts/:id/ledger", async ({ request, set, params }) => (await operator(request, set), admin.ledger(params.id, LEDGER_ROWS)));
  app.get("/dashboard/api/operator/accounts/:id/keys", async ({ request, set, params }) => (await operator(request, set), admin.listKeys(params.id)));
  app.post("/dashboard/api/operator/accounts/:id/keys", async ({ request, set, params, body }) => {
    await operator(request, set);
    set.status = 201;
    return admin.createKey(params.id, body ?? {});
  });
  app.delete("/dashboard/api/operator/keys/:id", async ({ request, set, params }) => {
    await operator(request, set);
    const revoked = await admin.revokeKey(params.id);
    guard.sessions.destroyForKey(params.id);
    return revoked;
  });

  app.get("/dashboard/api/operator/service", async ({ request, set }) => {
    await operator(request, set);
    return { ...serviceState(s), history: history.points() };
  });
}

function metricsHistoryOf(metrics: MetricsRegistry): MetricsHistory {
  const m = requestMetrics(metrics);
  // API traffic only: the dashboard's own polling and /metrics scrapes are not what operators watch.
  const api = (labels: string) => labels.startsWith('endpoint="/v1/');
  return new MetricsHistory(() => {
    let requests = 0;
    let clientErrors = 0;
    let serverErrors = 0;
    m.requests.forEach((value, labels) => {
      if (!api(labels)) return;
      requests += value;
      const status = /status="(\d)/.exec(labels)?.[1];
      if (status === "4") clientErrors += value;
      else if (status === "5") serverErrors += value;
    });
    const latency = m.latency.merged(api);
    return { requests, clientErrors, serverErrors, latencySum: latency.sum, latencyCount: latency.count, buckets: latency.buckets };
  }, LATENCY_BUCKETS);
}
