/**
 * Dashboard sign-ins that cannot hurt other users: a key holder flooding sign-ins is rate limited
 * (per key, per address) and only ever ends its own account's oldest sessions, never an
 * operator's or another account's. Behind a proxy listed in SWITCHYARD_TRUSTED_PROXIES the
 * throttles apply to the client X-Forwarded-For names, so one client's wrong tokens do not lock
 * out everyone behind the same proxy; an untrusted peer's X-Forwarded-For is ignored.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { dashboardSession, signIn } from "./support/dashboard-session";

const errorOf = async (r: Response) => ((await r.json()) as { error: { code: string; message: string } }).error;

describe("a flood of sign-ins with one account key", () => {
  let h: Harness;
  beforeAll(async () => {
    // 2 a minute: one more every 30 s, far longer than the flood takes.
    h = await startHarness({ SWITCHYARD_DASHBOARD_KEY_SIGNINS_PER_MINUTE: "2" });
  });
  afterAll(() => h.stop());

  test("gets 429 past the per-key rate; the operator's and another account's sessions still answer 200", async () => {
    const alice = await h.account(0.01, "alice");
    const bob = await h.account(1, "bob");
    const operator = await dashboardSession(h, "operator", ADMIN_TOKEN);
    const bobs = await dashboardSession(h, "account", bob.key);
    const statuses: number[] = [];
    let refusal: { code: string; message: string } | null = null;
    for (let i = 0; i < 20; i++) {
      const r = await signIn(h, "account", alice.key);
      statuses.push(r.status);
      if (r.status === 429) {
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
        refusal ??= await errorOf(r);
      } else await r.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, ...Array(18).fill(429)]);
    expect(refusal!.code).toBe("too_many_sign_ins");
    expect(refusal!.message).toStartWith("Too many dashboard sign-ins with this key (2 per minute). Retry after ");
    expect((await operator.call("GET", "/operator/accounts")).status).toBe(200);
    expect((await bobs.call("GET", "/account")).status).toBe(200);
    // The admin token is a key of its own, and bob's key too: both still sign in.
    expect((await signIn(h, "operator", ADMIN_TOKEN)).status).toBe(200);
    expect((await signIn(h, "account", bob.key)).status).toBe(200);
  });

  test("sign-ins from one address with many keys get 429 past the per-address rate, before the key is checked", async () => {
    const other = await startHarness({ SWITCHYARD_DASHBOARD_ADDRESS_SIGNINS_PER_MINUTE: "4" });
    try {
      const keys = await Promise.all([1, 2, 3, 4, 5].map((i) => other.account(1, `a${i}`)));
      for (const k of keys.slice(0, 4)) expect((await signIn(other, "account", k.key)).status).toBe(200);
      const r = await signIn(other, "account", keys[4]!.key);
      expect(r.status).toBe(429);
      expect((await errorOf(r)).message).toContain("Too many dashboard sign-ins from this address (4 per minute)");
      // Refused before the key is checked: a wrong one gets the same answer (no oracle).
      expect((await signIn(other, "account", "sy-wrong")).status).toBe(429);
    } finally {
      await other.stop();
    }
  });
});

describe("the session pool under 10,000 sign-ins with one key (rates raised out of the way)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      SWITCHYARD_DASHBOARD_KEY_SIGNINS_PER_MINUTE: "100000",
      SWITCHYARD_DASHBOARD_ADDRESS_SIGNINS_PER_MINUTE: "100000",
      SWITCHYARD_DASHBOARD_SESSIONS_PER_ACCOUNT: "3",
    });
  });
  afterAll(() => h.stop());

  test("only the flooding account's own oldest sessions end; the operator's and another account's live on", async () => {
    const alice = await h.account(0.01, "alice");
    const bob = await h.account(1, "bob");
    const operator = await dashboardSession(h, "operator", ADMIN_TOKEN);
    const bobs = await dashboardSession(h, "account", bob.key);
    const firstOfAlice = await dashboardSession(h, "account", alice.key);
    const total = 10_000;
    const batch = 50;
    let ok = 0;
    for (let i = 0; i < total; i += batch) {
      const rs = await Promise.all(Array.from({ length: batch }, () => signIn(h, "account", alice.key)));
      for (const r of rs) {
        if (r.status === 200) ok++;
        await r.body?.cancel();
      }
    }
    expect(ok).toBe(total);
    const lastOfAlice = await dashboardSession(h, "account", alice.key);
    expect((await operator.call("GET", "/operator/accounts")).status).toBe(200);
    expect((await bobs.call("GET", "/account")).status).toBe(200);
    expect((await lastOfAlice.call("GET", "/account")).status).toBe(200);
    expect((await firstOfAlice.call("GET", "/account")).status).toBe(401);
  }, 120_000);
});

describe("behind a trusted proxy (SWITCHYARD_TRUSTED_PROXIES)", () => {
  let h: Harness;
  beforeAll(async () => {
    // The test is the proxy: it connects from loopback and sets X-Forwarded-For as nginx would.
    h = await startHarness({ SWITCHYARD_TRUSTED_PROXIES: "127.0.0.1, ::1" });
  });
  afterAll(() => h.stop());

  test("one client's wrong tokens throttle that client only; another behind the same proxy still signs in", async () => {
    const a = await h.account(1);
    const mallory = { "x-forwarded-for": "198.51.100.1" };
    const carol = { "x-forwarded-for": "203.0.113.7, 198.51.100.2" }; // an earlier hop, then what the proxy saw
    for (let i = 0; i < 5; i++) expect((await signIn(h, "account", `sy-wrong-${i}`, mallory)).status).toBe(401);
    const locked = await signIn(h, "account", a.key, mallory);
    expect(locked.status).toBe(429);
    expect((await errorOf(locked)).code).toBe("too_many_failed_attempts");
    expect((await signIn(h, "account", a.key, carol)).status).toBe(200);
    // Forging an entry to the left changes nothing: the proxy's own entry (rightmost) is the client.
    expect((await signIn(h, "account", a.key, { "x-forwarded-for": "203.0.113.7, 198.51.100.1" })).status).toBe(429);
  });

  test("the admin API's throttle too", async () => {
    const admin = (token: string, xff: string) =>
      fetch(h.base + "/admin/accounts", { headers: { authorization: `Bearer ${token}`, "x-forwarded-for": xff } });
    for (let i = 0; i < 5; i++) expect((await admin(`wrong-admin-token-${i}`, "198.51.100.21")).status).toBe(401);
    expect((await admin(ADMIN_TOKEN, "198.51.100.21")).status).toBe(429);
    expect((await admin(ADMIN_TOKEN, "198.51.100.22")).status).toBe(200);
  });
});

describe("behind an untrusted peer", () => {
  test("its X-Forwarded-For is ignored: the peer's own address is throttled", async () => {
    const h = await startHarness({ SWITCHYARD_TRUSTED_PROXIES: "10.0.0.0/8" });
    try {
      const a = await h.account(1);
      for (let i = 0; i < 5; i++) expect((await signIn(h, "account", `sy-wrong-${i}`, { "x-forwarded-for": `198.51.100.${i}` })).status).toBe(401);
      expect((await signIn(h, "account", a.key, { "x-forwarded-for": "198.51.100.99" })).status).toBe(429);
    } finally {
      await h.stop();
    }
  });

  test("a bad SWITCHYARD_TRUSTED_PROXIES stops start-up naming the variable and the entry", async () => {
    await expect(startHarness({ SWITCHYARD_TRUSTED_PROXIES: "10.0.0.0/8, proxy.internal" })).rejects.toThrow(
      'SWITCHYARD_TRUSTED_PROXIES: must be comma-separated IPv4/IPv6 addresses or CIDR blocks: "proxy.internal" is not an IPv4 or IPv6 address or CIDR block',
    );
  });
});
