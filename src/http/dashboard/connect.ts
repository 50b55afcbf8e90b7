/**
 * The connect panel's facts (docs/dashboard.md): the base URL clients use. SWITCHYARD_PUBLIC_URL
 * when set; otherwise what the browser reached the dashboard at (its Host, and https when the
 * request came over TLS or with X-Forwarded-Proto: https). Never a key.
 */
import type { App } from "../route-module";
import type { Config } from "../../config";
import { dashboardHeaders } from "../../dashboard/assets";
import { cookieValue } from "../../dashboard/sessions";
import { signedOut, isHttps, type DashboardGuard } from "./guard";

/** The base URL (ending /v1) this request's client would use. */
export function baseUrlFor(request: Request, publicUrl: string | null): { base_url: string; source: "setting" | "request" } {
  if (publicUrl) return { base_url: `${publicUrl}/v1`, source: "setting" };
  const url = new URL(request.url);
  const host = request.headers.get("host") ?? url.host;
  return { base_url: `${isHttps(request) ? "https" : url.protocol.replace(":", "")}://${host}/v1`, source: "request" };
}

export function registerConnect(app: App, s: { config: Pick<Config, "publicUrl"> }, guard: DashboardGuard): void {
  app.get("/dashboard/api/connect", async ({ request, set }) => {
    dashboardHeaders(set);
    const session = guard.sessions.get(cookieValue(request.headers.get("cookie")));
    if (!session) throw signedOut();
    await guard.session(request, session.kind);
    return baseUrlFor(request, s.config.publicUrl);
  });
}
