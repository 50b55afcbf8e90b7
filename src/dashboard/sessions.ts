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

/** How many sessions live at once (docs/dashboard.md). */
export interface SessionCaps {
  /** Per account: a further sign-in ends that account's own oldest session. */
  perAccount: number;
  /** Operator sessions, a pool of their own: account sign-ins never end one. */
  operators: number;
  /** Account sessions in all: past it, the account holding the most loses its oldest. */
  accounts: number;
}

export const DEFAULT_SESSION_CAPS: SessionCaps = { perAccount: 20, operators: 50, accounts: 10_000 };

const OPERATORS = "operator";

/**
 * The live sessions, bounded so that nobody's sign-ins can end anyone else's session: each
 * account has its own cap and gives up its own oldest session, operators have a separate pool,
 * and when the account pool as a whole is full the account with the most sessions pays.
 */
export class DashboardSessions {
  private readonly sessions = new Map<string, Session>();
  /** Per group (an account's id, or OPERATORS): its session ids, oldest first. */
  private readonly groups = new Map<string, Set<string>>();
  private accountSessions = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly caps: SessionCaps = DEFAULT_SESSION_CAPS,
  ) {}

  create(init: Pick<Session, "kind" | "accountId" | "keyId" | "apiKey">): Session {
    const group = groupOf(init);
    const cap = init.kind === "operator" ? this.caps.operators : this.caps.perAccount;
    this.makeRoom(group, cap);
    if (init.kind === "account" && this.accountSessions >= this.caps.accounts) {
      this.dropExpired();
      while (this.accountSessions >= this.caps.accounts && this.accountSessions > 0) this.dropOldest(this.largestAccount());
    }
    const session: Session = { ...init, id: token(), csrfToken: token(), expiresAt: this.now() + this.ttlMs };
    this.sessions.set(session.id, session);
    let ids = this.groups.get(group);
    if (!ids) this.groups.set(group, (ids = new Set()));
    ids.add(session.id);
    if (init.kind === "account") this.accountSessions++;
    return session;
  }

  /** The live session with this id; an expired one is forgotten and reads as none. */
  get(id: string | null): Session | null {
    if (!id) return null;
    const s = this.sessions.get(id);
    if (!s) return null;
    if (s.expiresAt <= this.now()) {
      this.destroy(id);
      return null;
    }
    return s;
  }

  destroy(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    const group = groupOf(s);
    const ids = this.groups.get(group);
    ids?.delete(id);
    if (ids?.size === 0) this.groups.delete(group);
    if (s.kind === "account") this.accountSessions--;
  }

  /** Ends every session signed in with this key (it was revoked). */
  destroyForKey(keyId: string): void {
    for (const [id, s] of this.sessions) if (s.keyId === keyId) this.destroy(id);
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Live sessions of one account (or of operators with null). */
  countFor(accountId: string | null): number {
    return this.groups.get(accountId === null ? OPERATORS : `account:${accountId}`)?.size ?? 0;
  }

  /** Below `cap` sessions in `group`: its expired ones go first, then its oldest. */
  private makeRoom(group: string, cap: number): void {
    const ids = this.groups.get(group);
    if (!ids || ids.size < cap) return;
    const now = this.now();
    for (const id of [...ids]) if (this.sessions.get(id)!.expiresAt <= now) this.destroy(id);
    while ((this.groups.get(group)?.size ?? 0) >= cap) this.dropOldest(group);
  }

  private dropOldest(group: string): void {
    const oldest = this.groups.get(group)?.values().next().value;
    if (oldest !== undefined) this.destroy(oldest);
  }

  private dropExpired(): void {
    const now = this.now();
    for (const [id, s] of this.sessions) if (s.expiresAt <= now) this.destroy(id);
  }

  private largestAccount(): string {
    let largest = "";
    let most = 0;
    for (const [group, ids] of this.groups) {
      if (group !== OPERATORS && ids.size > most) {
        largest = group;
        most = ids.size;
      }
    }
    return largest;
  }
}

function groupOf(s: Pick<Session, "kind" | "accountId">): string {
  return s.kind === "operator" ? OPERATORS : `account:${s.accountId}`;
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
