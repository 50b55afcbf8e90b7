/** GET /v1/usage (docs/operate.md, "Limits, usage and metrics"): the caller's balance and its charges for a period, grouped. */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { identify, type KeyIdentityDeps } from "../auth";
import { parseUsageQuery } from "../../billing/usage-query";
import { invalidField } from "../../errors";
import { usageReport, type UsageRecords } from "../../billing/usage-report";

/** What GET /v1/usage uses: the caller's key, and the usage sums. */
export interface UsageRouteDeps extends KeyIdentityDeps {
  usage: UsageRecords;
}

export function registerUsageRoutes(app: App, s: UsageRouteDeps, docs: RouteDocs): void {
  docs.add({
    method: "GET",
    path: "/v1/usage",
    summary: "Balance (available, reserved) and usage for a period: query start, end (ISO dates, default the current month), group_by = day|model|endpoint (comma-separated).",
    auth: "key",
    public: true,
  });
  app.get("/v1/usage", async ({ bearer, request, set }) => {
    const caller = await identify(s, request, bearer, set);
    const q = parseUsageQuery(singleValuedQuery(request.url));
    return usageReport(s.usage, caller.accountId, q);
  });
}

const USAGE_PARAMS = new Set(["start", "end", "group_by"]);

/** The query as one value per known name: a repeated or unknown parameter is a 400, not ignored. */
function singleValuedQuery(url: string): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of new URL(url).searchParams) {
    if (!USAGE_PARAMS.has(name)) throw invalidField(name, "is not a query parameter of /v1/usage (use start, end, group_by)");
    if (out[name] !== undefined) throw invalidField(name, "may be given once (combine groupings with commas: group_by=day,model)");
    out[name] = value;
  }
  return out;
}
