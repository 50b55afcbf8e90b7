/**
 * The operator view's reports (docs/dashboard.md): the revenue overview, the request log (JSON
 * pages and a streamed CSV export), the models page, and "test this route". All read-only but
 * the route test, which sends one unbilled request to the route's upstream.
 */
import { Type } from "@sinclair/typebox";
import type { App } from "../route-module";
import { invalidField, notFound } from "../../errors";
import { validate } from "../../validate";
import { dashboardHeaders } from "../../dashboard/assets";
import { modelsView } from "../../dashboard/models-view";
import type { ServiceStateSources } from "../../dashboard/service-state";
import type { ModelEntry } from "../../catalog/catalog";
import type { Accounts } from "../../accounts/accounts";
import type { RequestOutcomes } from "../../generations/outcomes";
import type { RouteRegistry } from "../../upstream/registry";
import { revenueOverview, type RevenueRecords } from "../../billing/revenue";
import { csvStream, logRowView, parseLogQuery, type RequestLogRecords } from "../../generations/request-log";
import { testRoute } from "../../upstream/route-test";
import type { DashboardGuard } from "./guard";

const CSV_PAGE = 1000;
const TOP_PERIODS = [1, 7, 30, 90];
const RouteTestBody = Type.Object({ model: Type.String({ minLength: 1, maxLength: 256 }), route: Type.String({ minLength: 1, maxLength: 300 }) });

/** What the operator's reports read: revenue and the request log, account names, outcomes not yet written, and the models with their routes. */
export interface OperatorReportsDeps extends ServiceStateSources {
  store: { reports: RevenueRecords & RequestLogRecords };
  accounts: Pick<Accounts, "get">;
  outcomes: Pick<RequestOutcomes, "flush">;
  routes: ServiceStateSources["routes"] & Pick<RouteRegistry, "routeNamed">;
  isLive(entry: ModelEntry): boolean;
}

export function registerOperatorReports(app: App, s: OperatorReportsDeps, guard: DashboardGuard): void {
  const operator = async (request: Request, set: { headers: Record<string, unknown> }) => {
    dashboardHeaders(set);
    await guard.session(request, "operator");
  };
  const query = (request: Request) => new URL(request.url).searchParams;

  app.get("/dashboard/api/operator/overview", async ({ request, set }) => {
    await operator(request, set);
    const raw = query(request).get("days") ?? "30";
    const days = Number(raw);
    if (!TOP_PERIODS.includes(days)) throw invalidField("days", `must be one of ${TOP_PERIODS.join(", ")}`);
    const overview = await revenueOverview(s.store.reports, days);
    // Top accounts with their names (at most TOP_ROWS lookups).
    const names = await Promise.all(overview.top.accounts.map((a) => (a.account_id ? s.accounts.get(a.account_id) : null)));
    return { ...overview, top: { ...overview.top, accounts: overview.top.accounts.map((a, i) => ({ ...a, name: names[i]?.name ?? null })) } };
  });

  app.get("/dashboard/api/operator/requests", async ({ request, set }) => {
    await operator(request, set);
    const filter = parseLogQuery(query(request));
    await s.outcomes.flush(); // the last second's outcomes too
    const rows = await s.store.reports.requestLog(filter);
    return {
      data: rows.map(logRowView),
      next_cursor: rows.length === filter.limit ? rows[rows.length - 1]!.request_id : null,
    };
  });

  app.get("/dashboard/api/operator/requests.csv", async ({ request, set }) => {
    await operator(request, set);
    const filter = { ...parseLogQuery(query(request)), limit: CSV_PAGE };
    await s.outcomes.flush();
    const headers = new Headers();
    for (const [name, value] of Object.entries(set.headers)) if (typeof value === "string") headers.set(name, value);
    headers.set("content-type", "text/csv; charset=utf-8");
    headers.set("content-disposition", `attachment; filename="switchyard-requests-${new Date().toISOString().slice(0, 10)}.csv"`);
    return new Response(csvStream(s.store.reports, filter), { headers });
  });

  app.get("/dashboard/api/operator/models", async ({ request, set }) => (await operator(request, set), modelsView(s)));

  app.post("/dashboard/api/operator/routes/test", async ({ request, set, body }) => {
    await operator(request, set);
    const b = validate(RouteTestBody, body);
    const route = s.routes.routeNamed?.(b.model, b.route) ?? null;
    if (!route) throw notFound(`No served route '${b.route}' for model '${b.model}': see the models page for the routes.`);
    return { model: b.model, route: b.route, ...(await testRoute(route, Number(b.route.slice(b.route.lastIndexOf("#") + 1)) || 0)) };
  });
}
