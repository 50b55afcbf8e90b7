import { describe, expect, test } from "bun:test";
import { cookieValue, DashboardSessions, sessionCookie, SESSION_COOKIE } from "./sessions";
import { crossSiteReason } from "../http/dashboard/guard";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}
const account = { kind: "account" as const, accountId: "acct_a", keyId: "key_a", apiKey: "sy-a" };

describe("DashboardSessions", () => {
  test("a session lives until its expiry, then reads as none", () => {
    const c = clock();
    const s = new DashboardSessions(60_000, c.now);
    const session = s.create(account);
    expect(session.id).not.toBe(session.csrfToken);
    expect(s.get(session.id)).toBe(session);
    c.advance(59_999);
    expect(s.get(session.id)).toBe(session);
    c.advance(1);
    expect(s.get(session.id)).toBeNull();
    expect(s.size).toBe(0);
  });

  test("unknown ids and no cookie read as none; destroyForKey ends that key's sessions only", () => {
    const s = new DashboardSessions(60_000);
    const a = s.create(account);
    const b = s.create({ ...account, keyId: "key_b", apiKey: "sy-b" });
    expect(s.get(null)).toBeNull();
    expect(s.get("nope")).toBeNull();
    s.destroyForKey("key_a");
    expect(s.get(a.id)).toBeNull();
    expect(s.get(b.id)).toBe(b);
  });

  test("an account's sign-ins end that account's own oldest session, never another's or an operator's", () => {
    const c = clock();
    const s = new DashboardSessions(1_000, c.now, { perAccount: 3, operators: 2, accounts: 100 });
    const operator = s.create({ kind: "operator", accountId: null, keyId: null, apiKey: null });
    const other = s.create({ ...account, accountId: "acct_b", keyId: "key_b" });
    const first = s.create(account);
    c.advance(2_000); // `first`, `operator` and `other` expire: expired ones of the account go first
    const kept = [s.create(account), s.create(account), s.create(account)];
    expect(s.get(first.id)).toBeNull();
    expect(kept.every((k) => s.get(k.id) === k)).toBe(true);
    const op = s.create({ kind: "operator", accountId: null, keyId: null, apiKey: null });
    const b = s.create({ ...account, accountId: "acct_b", keyId: "key_b" });
    for (let i = 0; i < 1_000; i++) s.create(account);
    expect(s.countFor("acct_a")).toBe(3);
    expect(s.get(kept[2]!.id)).toBeNull();
    expect(s.get(op.id)).toBe(op);
    expect(s.get(b.id)).toBe(b);
    expect(s.get(operator.id)).toBeNull(); // expired, not evicted
    expect(s.get(other.id)).toBeNull();
    expect(s.countFor(null)).toBe(1);
  });

  test("operators have a pool of their own: the oldest operator session makes room for a new one", () => {
    const s = new DashboardSessions(60_000, Date.now, { perAccount: 2, operators: 2, accounts: 2 });
    const op = () => s.create({ kind: "operator", accountId: null, keyId: null, apiKey: null });
    const [o1, o2] = [op(), op()];
    s.create(account);
    s.create({ ...account, accountId: "acct_b" });
    s.create({ ...account, accountId: "acct_c" }); // the account pool is full: account sessions pay, not operators
    expect(s.get(o1.id)).toBe(o1);
    expect(s.get(o2.id)).toBe(o2);
    const o3 = op();
    expect(s.get(o1.id)).toBeNull();
    expect(s.get(o3.id)).toBe(o3);
  });

  test("a full account pool takes from the account holding the most sessions", () => {
    const s = new DashboardSessions(60_000, Date.now, { perAccount: 10, operators: 2, accounts: 4 });
    const small = s.create({ ...account, accountId: "acct_small" });
    const big = [s.create(account), s.create(account), s.create(account)];
    const newcomer = s.create({ ...account, accountId: "acct_new" });
    expect(s.get(small.id)).toBe(small);
    expect(s.get(big[0]!.id)).toBeNull();
    expect(s.get(big[1]!.id)).toBe(big[1]!);
    expect(s.get(newcomer.id)).toBe(newcomer);
    expect(s.size).toBe(4);
  });

  test("destroy, expiry and revocation keep the per-account counts right", () => {
    const c = clock();
    const s = new DashboardSessions(1_000, c.now, { perAccount: 2, operators: 1, accounts: 10 });
    const a = s.create(account);
    s.create({ ...account, keyId: "key_2" });
    s.destroy(a.id);
    expect(s.countFor("acct_a")).toBe(1);
    s.destroyForKey("key_2");
    expect(s.countFor("acct_a")).toBe(0);
    const b = s.create(account);
    c.advance(1_000);
    expect(s.get(b.id)).toBeNull();
    expect(s.countFor("acct_a")).toBe(0);
    expect(s.size).toBe(0);
  });
});

describe("session cookie", () => {
  test("HttpOnly, SameSite=Strict, scoped to /dashboard, expiring; Secure over HTTPS", () => {
    expect(sessionCookie("abc", 600, false)).toBe(`${SESSION_COOKIE}=abc; Path=/dashboard; Max-Age=600; HttpOnly; SameSite=Strict`);
    expect(sessionCookie("abc", 600, true)).toEndWith("; Secure");
  });

  test.each([
    [null, null],
    ["", null],
    [`${SESSION_COOKIE}=abc`, "abc"],
    [`other=1; ${SESSION_COOKIE}=abc; x=2`, "abc"],
    [`${SESSION_COOKIE}x=abc`, null],
    [`${SESSION_COOKIE}=`, null],
  ])("cookie header %p → %p", (header, value) => {
    expect(cookieValue(header)).toBe(value);
  });
});

describe("crossSiteReason", () => {
  const req = (headers: Record<string, string>) => new Request("http://127.0.0.1:8080/dashboard/api/x", { method: "POST", headers: { host: "127.0.0.1:8080", ...headers } });
  test.each([
    [{ "sec-fetch-site": "same-origin" }, null],
    [{ "sec-fetch-site": "same-site" }, "the browser reports it as same-site"],
    [{ "sec-fetch-site": "cross-site", origin: "http://127.0.0.1:8080" }, "the browser reports it as cross-site"],
    [{ "sec-fetch-site": "none" }, "the browser reports it as none"],
    [{ origin: "http://127.0.0.1:8080" }, null],
    [{ origin: "http://127.0.0.1:9999" }, "its Origin is another site"],
    [{ origin: "null" }, "its Origin header is not a URL"],
    [{}, null],
  ])("%p → %p", (headers, reason) => {
    expect(crossSiteReason(req(headers as Record<string, string>))).toBe(reason);
  });
});
