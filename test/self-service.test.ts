/**
 * GET /v1/key, GET /v1/credits and GET /v1/generation over real HTTP: OpenRouter's shapes, and
 * every money figure exactly the ledger's (the same sums GET /v1/usage reports, and an independent
 * calculation from catalog prices). A generation is visible to its own account only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { settled } from "./support/ledger-state";
import { chat } from "./support/gateway-client";

let fake: FakeUpstream;
let h: Harness;
let alice: { id: string; key: string };
let bob: { id: string; key: string };
const ids: Record<string, string> = {};
const today = new Date().toISOString().slice(0, 10);

const get = async (path: string, key = alice.key) => {
  const res = await fetch(h.base + path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any, res };
};
const usd = (units: number) => Number(unitsToUsd(units));

const glm = expectedChatCost("glm-4.6", 9, 3);
const kimi = expectedChatCost("kimi-k2-instruct", 9, 3);
const turbo = expectedChatCost("glm-4.6", 9, 3, true);

beforeAll(async () => {
  fake = startFakeUpstream({ words: ["x", "y", "z"], promptTokens: 9 });
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  alice = await h.account(3, "alice");
  bob = await h.account(1, "bob");
  const send = async (name: string, key: string, body: Record<string, unknown>) => {
    const res = await chat(h, key, body);
    ids[name] = res.headers.get("x-request-id")!;
    await res.text();
    return res.status;
  };
  expect(await send("glm1", alice.key, { model: "glm-4.6" })).toBe(200);
  expect(await send("glm2", alice.key, { model: "glm-4.6" })).toBe(200);
  expect(await send("kimiStream", alice.key, { model: "kimi-k2-instruct", stream: true })).toBe(200);
  expect(await send("turbo", alice.key, { model: "glm-4.6-turbo" })).toBe(200);
  fake.behave({ failStatus: 500 });
  expect(await send("failed", alice.key, { model: "glm-4.6" })).toBe(502);
  fake.behave({ words: ["x", "y", "z"], promptTokens: 9 });
  expect(await send("bob", bob.key, { model: "glm-4.6" })).toBe(200);
  expect((await h.admin("POST", `/admin/accounts/${alice.id}/credits`, { amount: "1.25", reason: "top-up" })).status).toBe(200);
  expect((await h.admin("POST", `/admin/accounts/${alice.id}/credits`, { amount: -0.5, reason: "refund" })).status).toBe(200);
  await settled(h, alice.id);
});
afterAll(async () => {
  await h.stop();
  fake.stop();
});

const spentUnits = () => 2 * glm + kimi + turbo;

describe("GET /v1/credits", () => {
  test("total_credits is what the operator added net, total_usage what was charged; their difference is the balance", async () => {
    const { status, body } = await get("/v1/credits");
    expect(status).toBe(200);
    expect(body).toEqual({ data: { total_credits: 3.75, total_usage: usd(spentUnits()) } });
    const balance = h.balanceUnits(alice.id).balance;
    expect(3_750_000_000 - spentUnits()).toBe(balance);
    expect(h.ledgerSum(alice.id)).toBe(balance);
  });

  test("needs a key; takes no query", async () => {
    expect((await fetch(h.base + "/v1/credits")).status).toBe(401);
    const bad = await get("/v1/credits?x=1");
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe("x");
  });
});

describe("GET /v1/key", () => {
  test("OpenRouter's shape: limit = credits added, limit_remaining = available, usage = the ledger's charges", async () => {
    const { status, body, res } = await get("/v1/key");
    expect(status).toBe(200);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("600");
    const spent = usd(spentUnits());
    expect(body.data).toEqual({
      label: "k",
      limit: 3.75,
      limit_remaining: usd(h.balanceUnits(alice.id).balance),
      limit_reset: null,
      include_byok_in_limit: false,
      usage: spent,
      usage_daily: spent,
      usage_weekly: spent,
      usage_monthly: spent,
      byok_usage: 0,
      byok_usage_daily: 0,
      byok_usage_weekly: 0,
      byok_usage_monthly: 0,
      is_free_tier: false,
      is_provisioning_key: false,
      is_management_key: false,
      rate_limit: { requests: 600, interval: "1m" },
      expires_at: null,
      creator_user_id: alice.id,
    });
  });

  test("the usage figures equal GET /v1/usage over the same periods", async () => {
    const key = (await get("/v1/key")).body.data;
    const daily = (await get(`/v1/usage?start=${today}&end=${today}`)).body;
    const monthly = (await get("/v1/usage")).body;
    const allTime = (await get("/v1/usage?start=2000-01-01&end=2999-12-31")).body;
    expect(key.usage_daily).toBe(daily.totals.cost);
    expect(key.usage_monthly).toBe(monthly.totals.cost);
    expect(key.usage).toBe(allTime.totals.cost);
    expect(key.limit_remaining).toBe(monthly.balance.available);
  });

  test("a per-account rate limit override shows in rate_limit, and a revoked key is refused", async () => {
    await h.admin("PATCH", `/admin/accounts/${bob.id}`, { rate_limit_rpm: 42 });
    expect((await get("/v1/key", bob.key)).body.data.rate_limit).toEqual({ requests: 42, interval: "1m" });
    const extra = (await h.admin("POST", `/admin/accounts/${bob.id}/keys`, {})).body;
    expect((await get("/v1/key", extra.key)).body.data.label).toBe(`${extra.prefix}…`);
    await h.admin("DELETE", `/admin/keys/${extra.id}`);
    expect((await get("/v1/key", extra.key)).status).toBe(401);
  });
});

describe("GET /v1/generation", () => {
  test("a billed request: the ledger's cost, tokens and tier, with status and timings", async () => {
    const { status, body } = await get(`/v1/generation?id=${ids.glm1}`);
    expect(status).toBe(200);
    const entry = h.server.services.db.query("SELECT amount FROM ledger_entries WHERE request_id = ?").get(ids.glm1!) as { amount: number };
    expect(-entry.amount).toBe(glm);
    expect(body.data).toMatchObject({
      id: ids.glm1, model: "glm-4.6", endpoint: "/v1/chat/completions", api_type: "completions", service_tier: "default",
      status: "completed", http_status: 200, streamed: false, cancelled: false, tokens_prompt: 9, tokens_completion: 3,
      characters: 0, total_cost: usd(glm), usage: usd(glm), billed: true,
    });
    expect(body.data.latency).toBeGreaterThanOrEqual(0);
    expect(body.data.generation_time).toBeGreaterThanOrEqual(0);
    expect(body.data.generation_time).toBeLessThanOrEqual(body.data.latency);
    expect(Math.abs(Date.parse(body.data.created_at) - Date.now())).toBeLessThan(60_000);
  });

  test("turbo and streamed requests carry their tier and stream flag", async () => {
    expect((await get(`/v1/generation?id=${ids.turbo}`)).body.data).toMatchObject({ service_tier: "priority", total_cost: usd(turbo) });
    expect((await get(`/v1/generation?id=${ids.kimiStream}`)).body.data).toMatchObject({ model: "kimi-k2-instruct", streamed: true, status: "completed", total_cost: usd(kimi) });
  });

  test("a failed request is recorded, not billed", async () => {
    const { status, body } = await get(`/v1/generation?id=${ids.failed}`);
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ status: "failed", http_status: 502, billed: false, total_cost: 0, model: "glm-4.6" });
  });

  test("records survive the write to the store (read back after the batch is flushed)", async () => {
    h.server.services.outcomes.flush();
    const row = h.server.services.db.query("SELECT http_status, outcome, account_id FROM request_outcomes WHERE request_id = ?").get(ids.kimiStream!);
    expect(row).toEqual({ http_status: 200, outcome: "completed", account_id: alice.id });
    expect((await get(`/v1/generation?id=${ids.kimiStream}`)).body.data.status).toBe("completed");
  });

  test("another account's request, or an unknown id, is a 404 that reveals nothing", async () => {
    const other = await get(`/v1/generation?id=${ids.bob}`);
    expect(other.status).toBe(404);
    expect(JSON.stringify(other.body)).not.toContain(bob.id);
    expect((await get(`/v1/generation?id=${ids.bob}`, bob.key)).status).toBe(200);
    expect((await get("/v1/generation?id=req_nothing")).status).toBe(404);
  });

  test("bad queries name the parameter", async () => {
    for (const [q, param] of [["", "id"], ["?id=", "id"], [`?id=${ids.glm1}&id=${ids.glm2}`, "id"], [`?id=${ids.glm1}&model=x`, "model"]] as const) {
      const r = await get(`/v1/generation${q}`);
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
    expect((await fetch(h.base + `/v1/generation?id=${ids.glm1}`)).status).toBe(401);
  });
});
