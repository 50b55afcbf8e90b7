/** The admin API (docs/operate.md, "Accounts, keys and credits"), behind SWITCHYARD_ADMIN_TOKEN. */
import type { App } from "../route-module";
import type { RouteDocs } from "../route-docs";
import type { Config } from "../../config";
import { authenticateAdmin, sourceAddress, type AdminAuthDeps } from "../auth";
import { Admin, type AdminDeps, CreateAccountBody, CreateKeyBody, CreditsBody, PatchAccountBody, PatchKeyBody } from "../../accounts/admin";

/** What the admin API uses: administration, the admin token, and the proxies trusted to name a client's address. */
export type AdminRouteDeps = AdminDeps & AdminAuthDeps & { config: Pick<Config, "trustedProxies"> };

export function registerAdminRoutes(app: App, s: AdminRouteDeps, docs: RouteDocs): void {
  const admin = new Admin(s);
  const d = (method: "GET" | "POST" | "PATCH" | "DELETE", path: string, summary: string, body?: any) =>
    docs.add({ method, path, summary, auth: "admin", body });
  d("POST", "/admin/accounts", "Create an account, optionally with initial credits.", CreateAccountBody);
  d("GET", "/admin/accounts", "List accounts.");
  d("GET", "/admin/accounts/:id", "One account.");
  d("PATCH", "/admin/accounts/:id", "Disable/enable an account or override its limits.", PatchAccountBody);
  d("POST", "/admin/accounts/:id/keys", "Create an API key; the key is shown only in this response.", CreateKeyBody);
  d("GET", "/admin/accounts/:id/keys", "List an account's keys (prefixes only).");
  d("PATCH", "/admin/keys/:id", "Change a key's name, spend limit (limit, limit_reset), expiry (expires_at), models or rate_limit_rpm.", PatchKeyBody);
  d("DELETE", "/admin/keys/:id", "Revoke an API key.");
  d("POST", "/admin/accounts/:id/credits", "Add (positive) or deduct (negative) credits.", CreditsBody);
  d("GET", "/admin/accounts/:id/ledger", "The account's ledger entries, newest first.");
  const authorized = (request: Request, bearer: string | undefined) => authenticateAdmin(s, request, bearer, sourceAddress(app, request, s.config.trustedProxies));

  app.post("/admin/accounts", ({ request, bearer, body, set }) => {
    authorized(request, bearer);
    set.status = 201;
    return admin.createAccount(body);
  });
  app.get("/admin/accounts", ({ request, bearer }) => (authorized(request, bearer), admin.listAccounts()));
  app.get("/admin/accounts/:id", ({ request, bearer, params }) => (authorized(request, bearer), admin.getAccount(params.id)));
  app.patch("/admin/accounts/:id", ({ request, bearer, params, body }) => (authorized(request, bearer), admin.patchAccount(params.id, body)));
  app.post("/admin/accounts/:id/keys", ({ request, bearer, params, body, set }) => {
    authorized(request, bearer);
    set.status = 201;
    return admin.createKey(params.id, body);
  });
  app.get("/admin/accounts/:id/keys", ({ request, bearer, params }) => (authorized(request, bearer), admin.listKeys(params.id)));
  app.patch("/admin/keys/:id", ({ request, bearer, params, body }) => (authorized(request, bearer), admin.patchKey(params.id, body)));
  app.delete("/admin/keys/:id", ({ request, bearer, params }) => (authorized(request, bearer), admin.revokeKey(params.id)));
  app.post("/admin/accounts/:id/credits", ({ request, bearer, params, body }) => (authorized(request, bearer), admin.adjustCredits(params.id, body)));
  app.get("/admin/accounts/:id/ledger", ({ request, bearer, params }) => (authorized(request, bearer), admin.ledger(params.id)));
}
