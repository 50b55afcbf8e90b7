/**
 * Who may call a dashboard API route: a live session of the right kind, and for anything that
 * changes state, proof that the request comes from the dashboard page itself:
 *   - the browser says the request is same-origin (Sec-Fetch-Site), or, from browsers that do not
 *     send that header, its Origin names this host;
 *   - the body is JSON (a cross-site HTML form cannot send that without a CORS preflight, which
 *     this server never grants);
 *   - the x-csrf-token header carries the session's own token (only the page, reading it from
 *     GET /dashboard/api/session, knows it).
 * The cookie alone is never enough: 127.0.0.1:8080 and 127.0.0.1:9999 are the same "site", so
 * SameSite=Strict does not stop a page on another port of the same host.
 *
 * An account session is as good as its key, checked on every request: it ends when the key is
 * revoked or expires or the account is disabled, and only a key without controls may manage the
 * account's keys (keyManager(); docs/operate.md, "Keys: limits, expiry, models").
 */
import { timingSafeEqual } from "node:crypto";
import { DomainError } from "../../errors";
import { cookieValue, type DashboardSessions, type Session, type SessionKind } from "../../dashboard/sessions";
import type { ApiKeys, KeyOwner } from "../../accounts/api-keys";
import { controlsInWords, controlsOf, expiredAt, managesKeys } from "../../accounts/key-controls";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export const signedOut = () =>
  new DomainError("authentication", "session_required", "You are not signed in to the dashboard, or your session has expired. Sign in again.");

const crossSite = (why: string) => new DomainError("permission", "cross_site_request", `Refused: ${why}. Dashboard changes must come from the dashboard page itself.`);

/** Why this request does not come from a page of this server, or null when it does. */
export function crossSiteReason(request: Request): string | null {
  const fetchSite = request.headers.get("sec-fetch-site");
  if (fetchSite !== null) {
    return fetchSite === "same-origin" ? null : `the browser reports it as ${fetchSite}`;
  }
  const origin = request.headers.get("origin");
  if (origin === null) return null;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return "its Origin header is not a URL";
  }
  return host === request.headers.get("host") ? null : "its Origin is another site";
}

/** The checks every state-changing dashboard request passes, signed in or not (sign-in itself). */
export function assertSameOriginWrite(request: Request): void {
  const reason = crossSiteReason(request);
  if (reason) throw crossSite(reason);
  const type = request.headers.get("content-type") ?? "";
  if (request.method !== "DELETE" && !/^application\/json\b/i.test(type)) {
    throw new DomainError("invalid_request", "unsupported_media_type", "Dashboard requests send JSON: set 'content-type: application/json'.");
  }
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function isHttps(request: Request): boolean {
  return request.url.startsWith("https:") || request.headers.get("x-forwarded-proto") === "https";
}

/** An account session checked on this request, with its key's owner as the store has it now. */
export interface AccountAccess {
  session: Session;
  accountId: string;
  keyId: string;
  owner: KeyOwner;
}

/**
 * Why an account session must end now, or null while it may go on: its key is revoked (or was
 * never this account's), its account disabled, or the key expired. Checked on every use, against
 * the key's owner as ApiKeys has it (a change made elsewhere reaches it within a second: docs/operate.md,
 * "Accounts, keys and credits").
 */
export function sessionEndReason(owner: KeyOwner | null, accountId: string | null, nowMs: number): string | null {
  if (!owner || owner.accountId !== accountId) return "The API key this session signed in with was revoked; the session has ended. Sign in with another key.";
  if (owner.disabled) return "This account is disabled; the session has ended. Contact the operator of this service.";
  const expired = expiredAt(owner.key, nowMs);
  if (expired !== null) return `The API key this session signed in with expired at ${new Date(expired).toISOString()}; the session has ended. Sign in with another key.`;
  return null;
}

export class DashboardGuard {
  constructor(private readonly s: { keys: Pick<ApiKeys, "authenticate"> }, readonly sessions: DashboardSessions) {}

  /** The caller's session, checked as described above; throws 401/403 otherwise. */
  async session(request: Request, kind: SessionKind): Promise<Session> {
    const session = this.checked(request, kind);
    if (session.kind === "account") await this.liveOwner(session);
    return session;
  }

  /** An account session and its key's owner, checked as session() does. */
  async account(request: Request): Promise<AccountAccess> {
    const session = this.checked(request, "account");
    const owner = await this.liveOwner(session);
    return { session, accountId: owner.accountId, keyId: owner.keyId, owner };
  }

  /**
   * An account session whose key may manage the account's keys: one without controls. Any other
   * gets 403 key_management_not_allowed naming its controls, whatever it asks to change.
   */
  async keyManager(request: Request): Promise<AccountAccess> {
    const access = await this.account(request);
    if (!managesKeys(access.owner.key)) {
      throw new DomainError(
        "permission",
        "key_management_not_allowed",
        `This session signed in with a key that has ${controlsInWords(controlsOf(access.owner.key))}: it can use models within them and read usage, but only a key without a limit, expiry, model list or rate limit creates or revokes this account's keys. Sign in with such a key, or ask the operator of this service.`,
      );
    }
    return access;
  }

  private checked(request: Request, kind: SessionKind): Session {
    const session = this.sessions.get(cookieValue(request.headers.get("cookie")));
    if (!session) throw signedOut();
    if (WRITES.has(request.method)) {
      assertSameOriginWrite(request);
      const sent = request.headers.get("x-csrf-token");
      if (!sent || !sameToken(sent, session.csrfToken)) {
        throw new DomainError("permission", "csrf_token_invalid", "Missing or wrong x-csrf-token header. Reload the dashboard and try again.");
      }
    }
    if (session.kind !== kind) {
      throw new DomainError("permission", "wrong_session", kind === "operator" ? "This needs the operator view: sign in with the admin token." : "This needs an account session: sign in with an API key.");
    }
    return session;
  }

  /** The session's key owner now; the session ends (and 401) when sessionEndReason says so. */
  private async liveOwner(session: Session): Promise<KeyOwner> {
    const owner = session.apiKey ? await this.s.keys.authenticate(session.apiKey) : null;
    const reason = sessionEndReason(owner, session.accountId, Date.now());
    if (reason !== null) {
      this.sessions.destroy(session.id);
      throw new DomainError("authentication", "session_required", reason);
    }
    return owner!;
  }
}
