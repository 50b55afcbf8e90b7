/**
 * Dashboard sessions: signing in exchanges an API key (account view) or the admin token
 * (operator view) for a random session id carried in a cookie that scripts cannot read
 * (HttpOnly), that other sites' requests do not carry (SameSite=Strict), that is sent only to
 * /dashboard, and that expires. Each session also has its own CSRF token, which the page sends
 * in a header on every state-changing request.
 *
 * Sessions live in this process's memory: a restart signs everyone out. An account session keeps
 * the key server-side (the page never stores it) so the playground can make billed requests
 * through the normal endpoints with it.
 */
import { randomBytes } from "node:crypto";

export type SessionKind = "account" | "operator";

export interface Session {
  id: string;
  kind: SessionKind;
  /** Account sessions: whose data this session may see, and the key it signed in with. */
  accountId: string | null;
  keyId: string | null;
  apiKey: string | null;
  csrfToken: string;
  expiresAt: number;
}

export const SESSION_COOKIE = "sy_dashboard";
export const COOKIE_PATH = "/dashboard";

const token = () => randomBytes(32).toString("base64url");

export class DashboardSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxSessions = 10_000,
  ) {}

  create(init: Pick<Session, "kind" | "accountId" | "keyId" | "apiKey">): Session {
    if (this.sessions.size >= this.maxSessions) this.evict();
    const session: Session = { ...init, id: token(), csrfToken: token(), expiresAt: this.now() + this.ttlMs };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session with this id; an expired one is forgotten and reads as none. */
  get(id: string | null): Session | null {
    if (!id) return null;
    const s = this.sessions.get(id);
    if (!s) return null;
    if (s.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return null;
    }
    return s;
  }

  destroy(id: string): void {
    this.sessions.delete(id);
  }

  /** Ends every session signed in with this key (it was revoked). */
  destroyForKey(keyId: string): void {
    for (const [id, s] of this.sessions) if (s.keyId === keyId) this.sessions.delete(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  private evict(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.sessions.delete(id);
    // Still full: the oldest sign-ins go first (Map order is insertion order).
    while (this.sessions.size >= this.maxSessions) this.sessions.delete(this.sessions.keys().next().value as string);
  }
}

/** The session cookie; `secure` when the page was served over HTTPS. */
export function sessionCookie(id: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${id}; Path=${COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? "; Secure" : ""}`;
}

/** The session cookie emptied and expired (sign-out). */
export function clearedCookie(secure: boolean): string {
  return sessionCookie("", 0, secure);
}

/** The value of cookie `name` in a Cookie header, or null. */
export function cookieValue(header: string | null, name: string = SESSION_COOKIE): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}
