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

  test("the store is bounded: expired sessions go first, then the oldest", () => {
    const c = clock();
    const s = new DashboardSessions(1_000, c.now, 3);
    const first = s.create(account);
    c.advance(2_000);
    const kept = [s.create(account), s.create(account), s.create(account)];
    expect(s.get(first.id)).toBeNull();
    expect(kept.every((k) => s.get(k.id) === k)).toBe(true);
    s.create(account);
    expect(s.get(kept[0]!.id)).toBeNull();
    expect(s.size).toBe(3);
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
