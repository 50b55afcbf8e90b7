/** Signs in to the dashboard's API over plain HTTP (no browser), for the API-level dashboard tests. */
import type { Harness } from "./harness";

export interface DashboardSession {
  cookie: string;
  csrf: string;
  /** A request to /dashboard/api with the cookie; writes carry the CSRF token and JSON unless overridden. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
}

export function signIn(h: Harness, kind: "account" | "operator", secret: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(h.base + "/dashboard/api/session", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ kind, secret }),
  });
}

export async function dashboardSession(h: Harness, kind: "account" | "operator", secret: string): Promise<DashboardSession> {
  const res = await signIn(h, kind, secret);
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
  const { csrf_token: csrf } = (await res.json()) as { csrf_token: string };
  return {
    cookie,
    csrf,
    call(method, path, body, headers = {}) {
      const h2: Record<string, string> = { cookie };
      if (method !== "GET") h2["x-csrf-token"] = csrf;
      if (body !== undefined) h2["content-type"] = "application/json";
      return fetch(h.base + "/dashboard/api" + path, { method, headers: { ...h2, ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    },
  };
}
