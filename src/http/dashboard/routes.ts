/**
 * GET /dashboard: the web dashboard, served from assets inside the binary (docs/dashboard.md).
 * This file serves the page and its assets and runs sign-in and sign-out; the account view's and
 * the operator view's API routes live beside it. Everything is under /dashboard, which is also
 * the only path the session cookie is sent to.
 */
import { Type } from "@sinclair/typebox";
import { createHash, timingSafeEqual } from "node:crypto";
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import { DomainError } from "../../errors";
import type { Config } from "../../config";
import { sourceAddress, tooManyFailures } from "../auth";
import type { AuthThrottle } from "../../limits/auth-throttle";
import type { ModelIds } from "../../catalog/resolve";
import type { LiveCatalogDeps } from "../../catalog/live-admin";
import { validate } from "../../validate";
import { dashboardAssets, dashboardHeaders, pageHtml } from "../../dashboard/assets";
import { assertSameOriginWrite, DashboardGuard, isHttps } from "./guard";
import { clearedCookie, cookieValue, DashboardSessions, DEFAULT_SESSION_CAPS, sessionCookie, type Session } from "../../dashboard/sessions";
import { SignInLimit } from "../../limits/sign-in-limit";
import type { ApiKeys, KeyOwner } from "../../accounts/api-keys";
import { allowedModelIds, controlsOf, managesKeys, refuseUnusableKey } from "../../accounts/key-controls";
import { registerAccountApi, type AccountApiDeps } from "./account-api";
import { registerOperatorApi, type OperatorApiDeps } from "./operator-api";
import { registerOperatorReports, type OperatorReportsDeps } from "./operator-reports";
import { registerOperatorCatalog } from "./operator-catalog";
import { registerConnect } from "./connect";

const SignInBody = Type.Object({
  kind: Type.Union([Type.Literal("account"), Type.Literal("operator")]),
  secret: Type.String({ minLength: 1, maxLength: 4096 }),
});

/** 429 for sign-ins past their rate (SWITCHYARD_DASHBOARD_*_SIGNINS_PER_MINUTE). */
function tooManySignIns(retryAfterMs: number, what: string): DomainError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new DomainError("rate_limited", "too_many_sign_ins", `Too many dashboard sign-ins ${what}. Retry after ${seconds} s.`, null, seconds);
}

const digest = (v: string) => createHash("sha256").update(v).digest();

/** What signing in uses: its settings, the throttle of wrong secrets, the key cache, and the model ids a key's list names. */
interface SignInDeps extends ModelIds {
  config: Pick<
    Config,
    | "dashboardSessionSeconds" | "dashboardSessionsPerAccount" | "dashboardOperatorSessions"
    | "dashboardKeySignInsPerMinute" | "dashboardAddressSignInsPerMinute" | "adminToken" | "trustedProxies"
  >;
  authThrottle: AuthThrottle;
  keys: ApiKeys;
}

/** What the dashboard uses: sign-in, and the account and operator views' APIs. */
export type DashboardDeps = SignInDeps & AccountApiDeps & OperatorApiDeps & OperatorReportsDeps & LiveCatalogDeps & {
  config: Pick<Config, "dashboard" | "publicUrl">;
};

export function registerDashboardRoutes(app: App, s: DashboardDeps, docs: RouteDocs): void {
  // Served only while SWITCHYARD_DASHBOARD is on (the default); off, /dashboard is unknown like any other path.
  if (!s.config.dashboard) return;
  docs.add({ method: "GET", path: "/dashboard", summary: "The web dashboard: an account view (sign in with an API key) and an operator view (the admin token).", auth: "none", produces: "text/html" });
  const c = s.config;
  const sessions = new DashboardSessions(c.dashboardSessionSeconds * 1000, Date.now, {
    perAccount: c.dashboardSessionsPerAccount,
    operators: c.dashboardOperatorSessions,
    accounts: DEFAULT_SESSION_CAPS.accounts,
  });
  const signIns = new SignInLimit({ keyPerMinute: c.dashboardKeySignInsPerMinute, addressPerMinute: c.dashboardAddressSignInsPerMinute });
  const guard = new DashboardGuard(s, sessions);
  const addressOf = (request: Request) => sourceAddress(app, request, s.config.trustedProxies);

  const page = async (set: { headers: Record<string, unknown> }) => {
    dashboardHeaders(set);
    const assets = await dashboardAssets();
    return new Response(pageHtml(assets.version), { headers: { "content-type": "text/html; charset=utf-8" } });
  };
  app.get("/dashboard", ({ set }) => page(set));
  app.get("/dashboard/", ({ set }) => page(set));

  const asset = async (request: Request, set: { headers: Record<string, unknown> }, kind: "js" | "css") => {
    dashboardHeaders(set);
    const assets = await dashboardAssets();
    const etag = `"${assets.version}"`;
    // Revalidated each time (cheap: an ETag match answers 304 with no body).
    set.headers["cache-control"] = "no-cache";
    set.headers["etag"] = etag;
    if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304 });
    const type = kind === "js" ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8";
    return new Response(kind === "js" ? assets.js : assets.css, { headers: { "content-type": type } });
  };
  app.get("/dashboard/assets/app.js", ({ request, set }) => asset(request, set, "js"));
  app.get("/dashboard/assets/app.css", ({ request, set }) => asset(request, set, "css"));

  /** The session as the page sees it; an account session also says what its key may do. */
  const view = (session: Session, owner: KeyOwner | null) => ({
    kind: session.kind,
    csrf_token: session.csrfToken,
    expires_at: new Date(session.expiresAt).toISOString(),
    account_id: session.accountId,
    ...(owner ? {
      key_id: owner.keyId,
      manages_keys: managesKeys(owner.key),
      key_controls: controlsOf(owner.key),
      allowed_models: allowedModelIds(s, owner.key.models),
    } : {}),
  });

  // Signed out is an ordinary answer here (the page asks on every load), not an error.
  app.get("/dashboard/api/session", async ({ request, set }) => {
    dashboardHeaders(set);
    const session = sessions.get(cookieValue(request.headers.get("cookie")));
    if (!session) return { kind: null };
    try {
      if (session.kind === "operator") return view(await guard.session(request, "operator"), null);
      const access = await guard.account(request);
      return view(access.session, access.owner);
    } catch (e) {
      if (e instanceof DomainError && e.kind === "authentication") return { kind: null, reason: e.message };
      throw e;
    }
  });

  app.post("/dashboard/api/session", async ({ request, body, set }) => {
    dashboardHeaders(set);
    assertSameOriginWrite(request);
    const b = validate(SignInBody, body);
    const source = addressOf(request);
    const gate = s.authThrottle.check(source);
    if (!gate.ok) throw tooManyFailures(gate.retryAfterMs, "keys or tokens");
    const fromAddress = signIns.fromAddress(source);
    if (!fromAddress.ok) throw tooManySignIns(fromAddress.retryAfterMs, `from this address (${c.dashboardAddressSignInsPerMinute} per minute)`);
    let session: Session;
    let signedInOwner: KeyOwner | null = null;
    if (b.kind === "account") {
      const key = b.secret.trim();
      const owner = await s.keys.authenticate(key);
      if (!owner) {
        s.authThrottle.failure(source);
        throw new DomainError("authentication", "invalid_api_key", "That API key is not valid: it is unknown or was revoked. Keys start with sy- and are shown once, when created.", "secret");
      }
      // Refused as on /v1 (not a wrong guess: the throttle is not charged).
      refuseUnusableKey(owner, "secret");
      const withKey = signIns.withKey(owner.keyId);
      if (!withKey.ok) throw tooManySignIns(withKey.retryAfterMs, `with this key (${c.dashboardKeySignInsPerMinute} per minute)`);
      session = sessions.create({ kind: "account", accountId: owner.accountId, keyId: owner.keyId, apiKey: key });
      signedInOwner = owner;
    } else {
      if (!s.config.adminToken) throw new DomainError("permission", "operator_view_off", "The operator view is off: this server has no SWITCHYARD_ADMIN_TOKEN.");
      if (!timingSafeEqual(digest(b.secret.trim()), digest(s.config.adminToken))) {
        s.authThrottle.failure(source);
        throw new DomainError("authentication", "invalid_admin_token", "Incorrect admin token.", "secret");
      }
      const withToken = signIns.withKey("operator");
      if (!withToken.ok) throw tooManySignIns(withToken.retryAfterMs, `with the admin token (${c.dashboardKeySignInsPerMinute} per minute)`);
      session = sessions.create({ kind: "operator", accountId: null, keyId: null, apiKey: null });
    }
    set.headers["set-cookie"] = sessionCookie(session.id, s.config.dashboardSessionSeconds, isHttps(request));
    return view(session, signedInOwner);
  });

  app.delete("/dashboard/api/session", async ({ request, set }) => {
    dashboardHeaders(set);
    const session = sessions.get(cookieValue(request.headers.get("cookie")));
    if (session) await guard.session(request, session.kind); // a sign-out needs the CSRF token too
    if (session) sessions.destroy(session.id);
    set.headers["set-cookie"] = clearedCookie(isHttps(request));
    return { signed_out: true };
  });

  registerAccountApi(app, s, guard);
  registerOperatorApi(app, s, guard);
  registerOperatorReports(app, s, guard);
  registerOperatorCatalog(app, s, guard);
  registerConnect(app, s, guard);
}
