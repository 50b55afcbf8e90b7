/**
 * The operator dashboard's reports over real HTTP, on both stores: revenue (today, 7 and 30
 * days) equal to the ledger's exact sums across accounts, spend per account in the accounts list,
 * top models and accounts, the request log's filters (account, key, model, status, time), cursor
 * paging and CSV export (plain decimals), the models page with routes and breakers, "test this
 * route" (unbilled), and the connect panel's base URL. Bad input gets a 400 naming the field.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat } from "./support/gateway-client";
import { settled } from "./support/ledger-state";
import { dashboardSession, type DashboardSession } from "./support/dashboard-session";
import { describeEachStore } from "./support/stores";
import { formatUsd } from "../src/billing/money";

describeEachStore("operator dashboard reports", (store) => {
  let fake: FakeUpstream;
  let h: Harness;
  let alice: { id: string; key: string };
  let bob: { id: string; key: string };
  let aliceKeyId: string;
  let op: DashboardSession;
  const ids: string[] = [];
  let failedId: string;

  const get = async (path: string, expectStatus = 200) => {
    const res = await op.call("GET", path);
    const text = await res.text();
    expect({ path, status: res.status, text: res.status === expectStatus ? "" : text }).toEqual({ path, status: expectStatus, text: "" });
    return { body: JSON.parse(text), text };
  };
  const unitsOf = async (accountId: string) => (await h.probe.charges(accountId)).reduce((s, c) => s - c.amount, 0);

  beforeAll(async () => {
    fake = startFakeUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, {}, store);
    alice = await h.account(5, "alice");
    bob = await h.account(5, "bob");
    aliceKeyId = (await h.admin("GET", `/admin/accounts/${alice.id}/keys`)).body.data[0].id;
    for (const [key, model] of [[alice.key, "glm-4.6"], [alice.key, "kimi-k2-instruct"], [alice.key, "glm-4.6"], [bob.key, "glm-4.6"]] as const) {
      const r = await chat(h, key, { model });
      expect(r.status).toBe(200);
      ids.push(r.headers.get("x-request-id")!);
      await r.text();
    }
    const bad = await chat(h, alice.key, { model: "no-such-model" });
    expect(bad.status).toBe(404);
    failedId = bad.headers.get("x-request-id")!;
    await settled(h, alice.id);
    await settled(h, bob.id);
    op = await dashboardSession(h, "operator", ADMIN_TOKEN);
  });
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  test("revenue today, 7 and 30 days is the exact sum of charges across accounts; top models and accounts by spend", async () => {
    const a = await unitsOf(alice.id);
    const b = await unitsOf(bob.id);
    expect(a).toBeGreaterThan(0);
    const { body, text } = await get("/operator/overview?days=7");
    for (const period of ["today", "last_7_days", "last_30_days"]) {
      expect(body.revenue[period]).toEqual({ requests: 4, revenue: Number(formatUsd(a + b)) });
    }
    // Written as the exact decimal, never a float's rounding or exponent.
    expect(text).toContain(`"revenue":${formatUsd(a + b)}`);
    expect(body.top.days).toBe(7);
    const charges = [...(await h.probe.charges(alice.id)), ...(await h.probe.charges(bob.id))];
    const byModel = new Map<string, number>();
    for (const c of charges) byModel.set(c.model!, (byModel.get(c.model!) ?? 0) - c.amount);
    const expected = [...byModel].sort((x, y) => y[1] - x[1]).map(([model, units]) => ({ model, units }));
    expect(body.top.models.map((m: any) => ({ model: m.model, units: m.revenue }))).toEqual(expected.map((e) => ({ model: e.model, units: Number(formatUsd(e.units)) })));
    expect(body.top.accounts.map((x: any) => x.account_id)).toEqual(a >= b ? [alice.id, bob.id] : [bob.id, alice.id]);
    expect(body.top.accounts.find((x: any) => x.account_id === alice.id)).toEqual({ account_id: alice.id, name: "alice", requests: 3, revenue: Number(formatUsd(a)) });
  });

  test("the accounts list shows each account's spend over the last 30 days", async () => {
    const { body, text } = await get("/operator/accounts");
    const spend = Object.fromEntries(body.data.map((x: any) => [x.id, x.spend_30_days]));
    expect(spend[alice.id]).toBe(Number(formatUsd(await unitsOf(alice.id))));
    expect(spend[bob.id]).toBe(Number(formatUsd(await unitsOf(bob.id))));
    expect(text).toContain(`"spend_30_days":${formatUsd(await unitsOf(bob.id))}`);
  });

  test("the request log: newest first, every request (failed ones too) with its cost; filters by account, key, model, status, time", async () => {
    const all = (await get("/operator/requests")).body.data;
    expect(all.map((r: any) => r.id)).toEqual([failedId, ...ids].sort().reverse());
    const first = all.find((r: any) => r.id === ids[0]);
    const charge = (await h.probe.charge(ids[0]!))!;
    expect(first).toMatchObject({ account_id: alice.id, key_id: aliceKeyId, model: "glm-4.6", status: "completed", http_status: 200, billed: true, total_cost: Number(formatUsd(-charge.amount)) });
    expect(all.find((r: any) => r.id === failedId)).toMatchObject({ status: "failed", http_status: 404, billed: false, total_cost: 0 });

    const idsOf = async (q: string) => (await get("/operator/requests?" + q)).body.data.map((r: any) => r.id).sort();
    expect(await idsOf(`account=${bob.id}`)).toEqual([ids[3]]);
    expect(await idsOf(`key=${aliceKeyId}`)).toEqual([failedId, ids[0], ids[1], ids[2]].sort());
    expect(await idsOf("model=kimi-k2-instruct")).toEqual([ids[1]]);
    expect(await idsOf("status=failed")).toEqual([failedId]);
    expect(await idsOf("status=404")).toEqual([failedId]);
    expect(await idsOf(`status=completed&account=${alice.id}`)).toEqual([ids[0], ids[1], ids[2]].sort());
    expect(await idsOf(`from=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    expect(await idsOf("from=2020-01-01&to=2099-01-01")).toHaveLength(5);
  });

  test("paging by cursor: pages in order, none repeated, the last without a next cursor", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page: any = (await get(`/operator/requests?limit=2${cursor ? `&cursor=${cursor}` : ""}`)).body;
      seen.push(...page.data.map((r: any) => r.id));
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual([failedId, ...ids].sort().reverse());
    expect(cursor).toBeNull();
  });

  test("bad filters get a 400 naming the field and the rule", async () => {
    for (const [q, field] of [["status=bogus", "status"], ["limit=0", "limit"], ["limit=501", "limit"], ["from=yesterday", "from"], ["cursor=x';--", "cursor"], ["from=2026-02-01&to=2026-01-01", "to"]]) {
      const { body } = await get(`/operator/requests?${q}`, 400);
      expect(body.error.param).toBe(field);
      expect(body.error.message).toContain(`'${field}'`);
    }
    expect((await get("/operator/overview?days=3", 400)).body.error.param).toBe("days");
  });

  test("CSV export streams every matching row, money as plain decimals equal to the ledger's", async () => {
    const res = await op.call("GET", `/operator/requests.csv?account=${alice.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="switchyard-requests-\d{4}-\d\d-\d\d\.csv"$/);
    const lines = (await res.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe("request_id,created_at,account_id,key_id,model,endpoint,status,http_status,streamed,latency_ms,tokens_prompt,tokens_completion,characters,cost_usd,tokens_cached,tokens_cache_write,cache_saved_usd");
    expect(lines).toHaveLength(5);
    for (const line of lines.slice(1)) {
      const cells = line.split(",");
      const id = cells[0]!;
      const charge = await h.probe.charge(id);
      expect(cells[13]).toBe(charge ? formatUsd(-charge.amount) : "0");
      expect(cells[13]).not.toContain("e");
      expect(cells[2]).toBe(alice.id);
    }
  });

  test("the models page lists prices, context windows and routes with their breakers", async () => {
    const { body } = await get("/operator/models");
    const glm = body.data.find((m: any) => m.id === "glm-4.6");
    expect(glm).toMatchObject({ type: "chat", live: true, context_window: expect.any(Number) });
    expect(glm.pricing.input_per_million_tokens).toMatch(/^\d+(\.\d+)?$/);
    expect(glm.routes).toEqual([{ model: "glm-4.6", route: "glm-4.6#0", upstream: "default", upstream_model: "glm-4.6", weight: 1, priority: false, breaker: "closed", consecutive_failures: 0 }]);
    expect(JSON.stringify(body)).not.toContain(new URL(fake.url).port);
  });

  test("testing a route sends one request to its upstream, unbilled, and says how it went", async () => {
    const before = fake.requests.length;
    const entries = await h.probe.entryCount();
    const res = await op.call("POST", "/operator/routes/test", { model: "glm-4.6", route: "glm-4.6#0" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body).toMatchObject({ model: "glm-4.6", route: "glm-4.6#0", ok: true, status: 200, error: null });
    expect(body.latency_ms).toBeGreaterThanOrEqual(0);
    expect(fake.requests.length).toBe(before + 1);
    expect(await h.probe.entryCount()).toBe(entries);

    fake.behave({ failStatus: 503 });
    try {
      const failed = (await (await op.call("POST", "/operator/routes/test", { model: "glm-4.6", route: "glm-4.6#0" })).json()) as any;
      expect(failed).toMatchObject({ ok: false, status: 503, error: "status 503" });
      expect(JSON.stringify(failed)).not.toContain(fake.url);
    } finally {
      fake.behave({});
    }
    expect((await op.call("POST", "/operator/routes/test", { model: "glm-4.6", route: "glm-4.6#9" })).status).toBe(404);
    const bad = await op.call("POST", "/operator/routes/test", { model: "glm-4.6" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toContain("route");
  });

  test("an account session cannot read the operator's reports", async () => {
    const as = await dashboardSession(h, "account", alice.key);
    for (const path of ["/operator/overview", "/operator/requests", "/operator/requests.csv", "/operator/models"]) {
      expect((await as.call("GET", path)).status).toBe(403);
    }
  });

  test("the connect panel's base URL: the request's host, https behind a TLS proxy; never a key", async () => {
    const as = await dashboardSession(h, "account", alice.key);
    const plain = (await (await as.call("GET", "/connect")).json()) as any;
    expect(plain).toEqual({ base_url: `${h.base}/v1`, source: "request" });
    const proxied = (await (await as.call("GET", "/connect", undefined, { "x-forwarded-proto": "https" })).json()) as any;
    expect(proxied.base_url).toBe(`https://${new URL(h.base).host}/v1`);
    expect((await (await op.call("GET", "/connect")).json() as any).base_url).toBe(`${h.base}/v1`);
  });
});

test("SWITCHYARD_PUBLIC_URL sets the connect panel's base URL", async () => {
  const h = await startHarness({ SWITCHYARD_PUBLIC_URL: "https://api.example.com/" });
  try {
    const op = await dashboardSession(h, "operator", ADMIN_TOKEN);
    expect(await (await op.call("GET", "/connect")).json()).toEqual({ base_url: "https://api.example.com/v1", source: "setting" });
  } finally {
    await h.stop();
  }
});
