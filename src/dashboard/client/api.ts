/**
 * The page's only way to the server: same-origin fetches to /dashboard/api with the session
 * cookie (sent by the browser, unreadable here) and, on writes, the session's CSRF token. The
 * token is kept in this module's memory only; nothing is ever put in localStorage or
 * sessionStorage, and the API key typed at sign-in is sent once and forgotten.
 */

export class ApiFailure extends Error {
  /** The request field the server names as at fault ("pricing.input_per_million"), or null. */
  constructor(readonly status: number, readonly code: string, message: string, readonly param: string | null = null) {
    super(message);
  }
}

export interface SessionInfo {
  kind: "account" | "operator";
  csrf_token: string;
  expires_at: string;
  account_id: string | null;
  /** Account sessions: the key signed in with, and what it may do (docs/operate.md, "The dashboard"). */
  key_id?: string;
  /** Only a key without controls creates and revokes the account's keys. */
  manages_keys?: boolean;
  /** The key's controls by API name ("limit", "expires_at", "models", "rate_limit_rpm"). */
  key_controls?: string[];
  /** The model ids the key may call; null: every model. */
  allowed_models?: string[] | null;
}

let csrfToken = "";
let onSignedOut: (message: string) => void = () => {};

export function useSession(session: SessionInfo | null): void {
  csrfToken = session?.csrf_token ?? "";
}

/** Called when the server says the session is over (expired, revoked, signed out elsewhere). */
export function whenSignedOut(handler: (message: string) => void): void {
  onSignedOut = handler;
}

async function failure(res: Response): Promise<ApiFailure> {
  let code = "error";
  let message = `The server answered ${res.status}.`;
  let param: string | null = null;
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; param?: string | null } };
    if (body.error?.message) message = body.error.message;
    if (body.error?.code) code = body.error.code;
    if (typeof body.error?.param === "string") param = body.error.param;
  } catch {
    // not JSON: keep the generic message
  }
  return new ApiFailure(res.status, code, message, param);
}

/** A raw call (the playground reads streams and audio from it). Throws ApiFailure on an error status. */
export async function call(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = {};
  if (method !== "GET") headers["x-csrf-token"] = csrfToken;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch("/dashboard/api" + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
    signal,
  });
  if (res.ok) return res;
  const err = await failure(res);
  if (res.status === 401 && path !== "/session") onSignedOut(err.message);
  throw err;
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await call(method, path, body);
  return (await res.json()) as T;
}
