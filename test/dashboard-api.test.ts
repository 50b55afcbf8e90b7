/**
 * The dashboard's API over real HTTP, without a browser: sign-in (a clear message for a wrong key
 * or token, throttled per address), the session cookie, CSRF and cross-site checks on every
 * write, one account never seeing or touching another's data, operator writes going through the
 * admin operations (same validation), service state reflecting real breakers and in-flight
 * requests, session expiry, and SWITCHYARD_DASHBOARD=off.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat, readUntil } from "./support/gateway-client";
import { settled } from "./support/ledger-state";
import { dashboardSession, signIn, type DashboardSession } from "./support/dashboard-session";

let fake: FakeUpstream;
let h: Harness;
let alice: { id: string; key: string };
let bob: { id: string; key: string };
let bobRequest: string;
let bobKeyId: string;
let as: DashboardSession;

const keyCount = (accountId: string) =>
  (h.db.query("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?").get(accountId) as { n: number }).n;

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  alice = await h.account(5, "alice");
  bob = await h.account(5, "bob");
  const r = await chat(h, bob.key);
  bobRequest = r.headers.get("x-request-id")!;
  await r.text();
  bobKeyId = (await h.admin("GET", `/admin/accounts/${bob.id}/keys`)).body.data[0].id;
  as = await dashboardSession(h, "account", alice.key);
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

describe("sign-in", () => {
  test("an API key opens an account session: an HttpOnly, SameSite=Strict, expiring cookie for /dashboard only", async () => {
    const res = await signIn(h, "account", alice.key);
    expect(res.status).toBe(200);
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^sy_dashboard=[\w-]{43}; Path=\/dashboard; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ kind: "account", account_id: alice.id });
    expect(JSON.stringify(body)).not.toContain(alice.key);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
  });

  test("a wrong key or token gets a clear 401; a disabled account a 403; the admin token an operator session", async () => {
    const wrongKey = await signIn(h, "account", "sy-not-a-key");
    expect(wrongKey.status).toBe(401);
    expect(((await wrongKey.json()) as any).error.message).toContain("That API key is not valid");
    const wrongToken = await signIn(h, "operator", "not-the-admin-token");
    expect(wrongToken.status).toBe(401);
    expect(((await wrongToken.json()) as any).error.message).toBe("Incorrect admin token.");
    expect((await signIn(h, "operator", ADMIN_TOKEN)).status).toBe(200);
    const bad = await signIn(h, "nobody" as "account", "x");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.param).toBe("kind");
  });

  test("a sign-in posted from another site is refused", async () => {
    expect((await signIn(h, "account", alice.key, { origin: "http://evil.example" })).status).toBe(403);
    expect((await signIn(h, "account", alice.key, { "sec-fetch-site": "cross-site" })).status).toBe(403);
  });

  test("GET /dashboard/api/session says who is signed in, and nothing without a cookie", async () => {
    expect(await (await as.call("GET", "/session")).json()).toMatchObject({ kind: "account", csrf_token: as.csrf });
    expect(await (await fetch(h.base + "/dashboard/api/session")).json()).toEqual({ kind: null });
  });
});

describe("CSRF and cross-site writes", () => {
  test("a write without the session's token, from another origin, or not JSON, is refused and changes nothing", async () => {
    const before = keyCount(alice.id);
    const cases: [Record<string, string>, number, string][] = [
      [{ "x-csrf-token": "" }, 403, "csrf_token_invalid"],
      [{ "x-csrf-token": "wrong-token" }, 403, "csrf_token_invalid"],
      [{ "sec-fetch-site": "same-site" }, 403, "cross_site_request"],
      [{ origin: "http://127.0.0.1:1" }, 403, "cross_site_request"],
      [{ "content-type": "text/plain" }, 400, "unsupported_media_type"],
    ];
    for (const [headers, status, code] of cases) {
      const res = await as.call("POST", "/account/keys", { name: "forged" }, headers);
      expect([res.status, ((await res.json()) as any).error.code]).toEqual([status, code]);
    }
    expect(keyCount(alice.id)).toBe(before);
    const ok = await as.call("POST", "/account/keys", { name: "real" }, { origin: h.base, "sec-fetch-site": "same-origin" });
    expect(ok.status).toBe(201);
    expect(keyCount(alice.id)).toBe(before + 1);
  });

  test("no cookie: 401 for reads and writes alike", async () => {
    expect((await fetch(h.base + "/dashboard/api/account")).status).toBe(401);
    const w = await fetch(h.base + "/dashboard/api/account/keys", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": as.csrf }, body: "{}" });
    expect(w.status).toBe(401);
  });
});

describe("one account never sees another's data", () => {
  test("the overview holds only the caller's account", async () => {
    const text = await (await as.call("GET", "/account")).text();
    expect(text).toContain(alice.id);
    expect(text).not.toContain(bob.id);
    expect(text).not.toContain(bobRequest);
  });

  test("another account's request and key read as not found; its key is not revoked", async () => {
    expect((await as.call("GET", `/account/generations/${bobRequest}`)).status).toBe(404);
    expect((await as.call("DELETE", `/account/keys/${bobKeyId}`)).status).toBe(404);
    expect((await chat(h, bob.key)).status).toBe(200);
    const keys = (await (await as.call("GET", "/account/keys")).json()) as any;
    expect(keys.data.every((k: any) => k.account_id === alice.id)).toBe(true);
  });

  test("an account session cannot use the operator API, nor an operator session the account API", async () => {
    expect((await as.call("GET", "/operator/accounts")).status).toBe(403);
    const op = await dashboardSession(h, "operator", ADMIN_TOKEN);
    expect((await op.call("GET", "/account")).status).toBe(403);
  });

  test("the playground bills the session's own account, through the normal endpoint", async () => {
    const before = h.balanceUnits(alice.id).balance;
    const bobBefore = h.balanceUnits(bob.id).balance;
    const res = await as.call("POST", "/account/playground/chat", { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-generation-id")!;
    expect(id).toBe(res.headers.get("x-request-id")!);
    const cost = ((await res.json()) as any).usage.cost;
    await settled(h, alice.id);
    expect(before - h.balanceUnits(alice.id).balance).toBe(Math.round(cost * 1e9));
    expect(h.balanceUnits(bob.id).balance).toBe(bobBefore);
    const record = (await (await as.call("GET", `/account/generations/${id}`)).json()) as any;
    expect(record).toMatchObject({ id, total_cost: cost, billed: true });
    // Validation is the endpoint's own.
    const bad = await as.call("POST", "/account/playground/chat", { model: "glm-4.6" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.param).toBe("messages");
    expect((await as.call("POST", "/account/playground/images", {})).status).toBe(404);
  });

  test("a playground named after an Object.prototype property is not found, like any other unknown one", async () => {
    for (const kind of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
      const res = await as.call("POST", `/account/playground/${kind}`, { model: "glm-4.6", messages: [{ role: "user", content: "hi" }] });
      const body = (await res.json()) as any;
      expect([kind, res.status, body.error.code]).toEqual([kind, 404, "not_found"]);
      expect(body.error.message).toContain("use chat, speech or embeddings");
    }
    // The session is still signed in.
    expect((await as.call("GET", "/account")).status).toBe(200);
  });
});

describe("account sessions end with their key or account", () => {
  test("revoking the key a session signed in with ends that session", async () => {
    const extra = (await h.admin("POST", `/admin/accounts/${alice.id}/keys`, { name: "temp" })).body;
    const s = await dashboardSession(h, "account", extra.key);
    const revoked = await s.call("DELETE", `/account/keys/${extra.id}`);
    expect(await revoked.json()).toMatchObject({ revoked: true, signed_out: true });
    expect((await s.call("GET", "/account")).status).toBe(401);
    expect(((await (await s.call("GET", "/session")).json()) as any).kind).toBeNull();
  });

  test("a key revoked elsewhere (admin API) or a disabled account ends it too", async () => {
    const extra = (await h.admin("POST", `/admin/accounts/${bob.id}/keys`, { name: "temp" })).body;
    const s = await dashboardSession(h, "account", extra.key);
    await h.admin("DELETE", `/admin/keys/${extra.id}`);
    const r = await s.call("GET", "/account");
    expect(r.status).toBe(401);
    expect(((await r.json()) as any).error.message).toContain("revoked");
    const b = await dashboardSession(h, "account", bob.key);
    await h.admin("PATCH", `/admin/accounts/${bob.id}`, { disabled: true });
    expect((await b.call("GET", "/account")).status).toBe(401);
    expect((await signIn(h, "account", bob.key)).status).toBe(403);
    await h.admin("PATCH", `/admin/accounts/${bob.id}`, { disabled: false });
  });
});

describe("operator API", () => {
  let op: DashboardSession;
  beforeAll(async () => {
    op = await dashboardSession(h, "operator", ADMIN_TOKEN);
  });

  test("writes are the admin operations: same results, same validation", async () => {
    const created = await op.call("POST", "/operator/accounts", { name: "carol", credits: "2.5" });
    expect(created.status).toBe(201);
    const carol = (await created.json()) as any;
    expect(carol).toMatchObject({ name: "carol", balance: 2.5, available: 2.5 });
    const added = await op.call("POST", `/operator/accounts/${carol.id}/credits`, { amount: "0.000000001", reason: "tiny" });
    expect(((await added.json()) as any).balance).toBe(2.500000001);
    const tooMuch = await op.call("POST", `/operator/accounts/${carol.id}/credits`, { amount: -10, reason: "oops" });
    expect(tooMuch.status).toBe(400);
    expect(((await tooMuch.json()) as any).error.param).toBe("amount");
    const noReason = await op.call("POST", `/operator/accounts/${carol.id}/credits`, { amount: 1 });
    expect(((await noReason.json()) as any).error.param).toBe("reason");
    const limits = await op.call("PATCH", `/operator/accounts/${carol.id}`, { rate_limit_rpm: 0 });
    expect(limits.status).toBe(400);
    expect(((await limits.json()) as any).error.param).toBe("rate_limit_rpm");
    expect((await (await op.call("PATCH", `/operator/accounts/${carol.id}`, { disabled: true, concurrency_limit: 3 })).json()) as any).toMatchObject({ disabled: true, concurrency_limit: 3 });
    expect((await h.admin("GET", `/admin/accounts/${carol.id}`)).body).toMatchObject({ balance: 2.500000001, disabled: true, concurrency_limit: 3 });
    const ledger = (await (await op.call("GET", `/operator/accounts/${carol.id}/ledger`)).json()) as any;
    expect(ledger.data.map((e: any) => [e.kind, e.amount, e.reason])).toEqual([["credit", 0.000000001, "tiny"], ["credit", 2.5, "initial credits"]]);
    const key = (await (await op.call("POST", `/operator/accounts/${carol.id}/keys`, { name: "first" })).json()) as any;
    expect(key.key).toStartWith("sy-");
    expect((await op.call("DELETE", `/operator/keys/${key.id}`)).status).toBe(200);
    expect((await op.call("GET", "/operator/accounts/acct_nope/ledger")).status).toBe(404);
  });

  test("service state: breakers open after failures, requests in flight, and the request history", async () => {
    fake.behave({ failStatus: 500 });
    // 5xx open a breaker only when several accounts get them (one tenant cannot take a route).
    for (let i = 0; i < 5; i++) expect((await chat(h, (i % 2 ? bob : alice).key, { model: "minimax-m2" })).status).toBe(502);
    fake.behave({ words: ["a", "b", "c", "d"], chunkDelayMs: 300 });
    const slow = await chat(h, alice.key, { model: "glm-4.6", stream: true });
    const { reader } = await readUntil(slow, (t) => t.includes('"a"'));
    const state = (await (await op.call("GET", "/operator/service")).json()) as any;
    await reader.cancel();
    fake.behave({});
    const route = state.routes.find((r: any) => r.model === "minimax-m2");
    expect(route).toMatchObject({ route: "minimax-m2#0", upstream: "default", breaker: "open", consecutive_failures: 5 });
    expect(state.routes.find((r: any) => r.model === "glm-4.6").breaker).toBe("closed");
    expect(JSON.stringify(state)).not.toContain(new URL(fake.url).port);
    expect(state.requests_in_flight).toBeGreaterThanOrEqual(1);
    expect(state.local_models).toContainEqual({ model: "voice-82m", kind: "speech", loaded: false });
    const last = state.history.at(-1);
    expect(last.rps).toBeGreaterThan(0);
    expect(last.serverErrorsPerSec).toBeGreaterThan(0);
    expect(last.meanMs).toBeGreaterThan(0);
  });
});

describe("expiry, throttling and switching the dashboard off", () => {
  let short: Harness;
  beforeAll(async () => {
    short = await startHarness({ SWITCHYARD_DASHBOARD_SESSION_SECONDS: "1" });
  });
  afterAll(() => short.stop());

  test("an expired session is refused and reads as signed out", async () => {
    const a = await short.account(1);
    const s = await dashboardSession(short, "account", a.key);
    expect((await s.call("GET", "/account")).status).toBe(200);
    await Bun.sleep(1_100);
    const r = await s.call("GET", "/account");
    expect(r.status).toBe(401);
    expect(((await r.json()) as any).error.code).toBe("session_required");
  });

  test("wrong keys and tokens from one address are throttled: 429 with Retry-After, even for a right one", async () => {
    const a = await short.account(1);
    for (let i = 0; i < 5; i++) expect((await signIn(short, i % 2 ? "operator" : "account", `wrong-${i}-0123456789abcdef`)).status).toBe(401);
    for (const [kind, secret] of [["account", "sy-wrong"], ["account", a.key]] as const) {
      const r = await signIn(short, kind, secret);
      expect(r.status).toBe(429);
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await r.json()) as any).error.message).toContain("Too many wrong keys or tokens from this address");
    }
  });

  test("SWITCHYARD_DASHBOARD=off removes the dashboard; the self-service endpoints stay", async () => {
    const off = await startHarness({ SWITCHYARD_DASHBOARD: "off" });
    try {
      const a = await off.account(1);
      expect((await fetch(off.base + "/dashboard")).status).toBe(404);
      expect((await signIn(off, "account", a.key)).status).toBe(404);
      expect((await fetch(off.base + "/v1/key", { headers: { authorization: `Bearer ${a.key}` } })).status).toBe(200);
    } finally {
      await off.stop();
    }
  });
});
