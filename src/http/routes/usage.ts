/** GET /v1/usage (contract §9): the caller's balance and its charges for a period, grouped. */
import type { App } from "../app";
import type { Services } from "../../services";
import type { RouteDocs } from "../route-docs";
import { identify } from "../auth";
import { attachRateHeaders } from "../limits-hook";
import { parseUsageQuery } from "../../billing/usage-query";
import { usageReport } from "../../billing/usage-report";

export function registerUsageRoutes(app: App, s: Services, docs: RouteDocs): void {
  docs.add({
    method: "GET",
    path: "/v1/usage",
    summary: "Balance (available, reserved) and usage for a period: query start, end (ISO dates, default the current month), group_by = day|model|endpoint (comma-separated).",
    auth: "key",
    public: true,
  });
  app.get("/v1/usage", ({ bearer, request, set, query }) => {
    const caller = identify(s, request, bearer);
    // Reading usage is not model work: it reports the rate without consuming it.
    attachRateHeaders(s, set, caller.accountId);
    const q = parseUsageQuery(query as Record<string, string | undefined>);
    return usageReport(s.db, caller.accountId, q);
  });
}
