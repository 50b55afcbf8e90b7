/**
 * GET /v1/usage over real HTTP (docs/operate.md, "Limits, usage and metrics"): balance, totals and grouped rows equal the sums of
 * the account's ledger charge entries; bad queries and bad admin limit values get a 400 naming the
 * parameter and the rule, and never change the ledger.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost, unitsToUsd } from "./support/expected-cost";
import { settled, storeState } from "./support/ledger-state";
import { describeEachStore } from "./support/stores";
import { chat } from "./support/gateway-client";

describeEachStore("GET /v1/usage", (store) => {
  let fake: FakeUpstream;
  let h: Harness;
  let acct: { id: string; key: string };
  const today = new Date().toISOString().slice(0, 10);

  const usage = async (query = "", key = acct.key) => {
    const res = await fetch(h.base + "/v1/usage" + query, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as any, res };
  };

  beforeAll(async () => {
    fake = startFakeUpstream({ words: ["x", "y", "z"], promptTokens: 9 });
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, {}, store);
    acct = await h.account(3);
    // Traffic: 3 × glm-4.6, 2 × kimi-k2-instruct (one streamed), 1 turbo, 1 failing (not billed).
    for (let i = 0; i < 3; i++) expect((await chat(h, acct.key, { model: "glm-4.6" })).status).toBe(200);
    expect((await chat(h, acct.key, { model: "kimi-k2-instruct" })).status).toBe(200);
    expect(await (await chat(h, acct.key, { model: "kimi-k2-instruct", stream: true })).text()).toContain("[DONE]");
    expect((await chat(h, acct.key, { model: "glm-4.6-turbo" })).status).toBe(200);
    fake.behave({ failStatus: 500 });
    expect((await chat(h, acct.key, { model: "glm-4.6" })).status).toBe(502);
    fake.behave({ words: ["x", "y", "z"], promptTokens: 9 });
    await settled(h, acct.id);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  describe("GET /v1/usage", () => {
    test("needs a key", async () => {
      const res = await fetch(h.base + "/v1/usage");
      expect(res.status).toBe(401);
    });

    test("defaults: current month, grouped by day; totals equal the ledger's charge entries", async () => {
      const { status, body, res } = await usage();
      expect(status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit-requests")).not.toBeNull();
      const glm = expectedChatCost("glm-4.6", 9, 3);
      const kimi = expectedChatCost("kimi-k2-instruct", 9, 3);
      const turbo = expectedChatCost("glm-4.6", 9, 3, true);
      const totalUnits = 3 * glm + 2 * kimi + turbo;
      expect(body.object).toBe("usage");
      expect(body.group_by).toEqual(["day"]);
      expect(body.start.slice(8, 10)).toBe("01");
      expect(body.totals).toEqual({ requests: 6, input_tokens: 54, cached_input_tokens: 0, cache_write_tokens: 0, output_tokens: 18, characters: 0, cost: Number(unitsToUsd(totalUnits)) });
      expect(body.rows).toEqual([{ day: today, ...body.totals }]);
      const state = await storeState(h, acct.id);
      expect(3_000_000_000 - state.sum).toBe(totalUnits);
      expect(body.balance).toEqual({ total: Number(unitsToUsd(state.balance)), available: Number(unitsToUsd(state.balance - state.reserved)), reserved: 0 });
    });

    test("group_by model, endpoint and combinations; rows add up to the totals", async () => {
      const { body } = await usage("?group_by=model");
      expect(body.rows.map((r: any) => [r.model, r.requests])).toEqual([["glm-4.6", 3], ["glm-4.6-turbo", 1], ["kimi-k2-instruct", 2]]);
      expect(body.rows.find((r: any) => r.model === "glm-4.6-turbo").cost).toBe(Number(unitsToUsd(expectedChatCost("glm-4.6", 9, 3, true))));
      const all = await usage(`?group_by=day,model,endpoint&start=${today}&end=${today}`);
      expect(all.status).toBe(200);
      expect(all.body.rows.length).toBe(3);
      for (const r of all.body.rows) expect(Object.keys(r).slice(0, 3)).toEqual(["day", "model", "endpoint"]);
      const sum = (k: string) => all.body.rows.reduce((n: number, r: any) => n + r[k], 0);
      expect(sum("requests")).toBe(all.body.totals.requests);
      expect(sum("input_tokens")).toBe(all.body.totals.input_tokens);
      const byEndpoint = await usage("?group_by=endpoint");
      expect(byEndpoint.body.rows).toEqual([{ endpoint: "/v1/chat/completions", ...byEndpoint.body.totals }]);
    });

    test("a period with no traffic is all zeros; only this account's entries count", async () => {
      const { body } = await usage("?start=2020-01-01&end=2020-01-31");
      expect(body.totals).toEqual({ requests: 0, input_tokens: 0, cached_input_tokens: 0, cache_write_tokens: 0, output_tokens: 0, characters: 0, cost: 0 });
      expect(body.rows).toEqual([]);
      const other = await h.account(1);
      expect((await usage("", other.key)).body.totals.requests).toBe(0);
    });

    test.each([
      ["?group_by=week", "group_by", "must be a comma-separated list of day, model, endpoint"],
      ["?group_by=", "group_by", "is not one of them"],
      ["?start=yesterday", "start", "must be an ISO 8601 date"],
      ["?start=2026-02-30", "start", "must be an ISO 8601 date"],
      ["?end=2026-11-01T10:00", "end", "must be an ISO 8601 date"],
      ["?start=2026-11-10&end=2026-11-01", "end", "must not be before start"],
    ])("%s → 400 naming %s, nothing changes", async (query, param, rule) => {
      const before = await storeState(h, acct.id);
      const { status, body } = await usage(query);
      expect(status).toBe(400);
      expect(body.error.param).toBe(param);
      expect(body.error.type).toBe("invalid_request_error");
      expect(body.error.message).toContain(rule);
      expect(await storeState(h, acct.id)).toEqual(before);
    });
  });

  describe("bad limits and credits on the admin API", () => {
    test.each([
      [{ rate_limit_rpm: 0 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: -5 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: 2.5 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: "60" }, "rate_limit_rpm"],
      [{ concurrency_limit: 0 }, "concurrency_limit"],
      [{ concurrency_limit: -1 }, "concurrency_limit"],
    ])("PATCH %p → 400 naming the field; the account is unchanged", async (patch, param) => {
      const before = await h.admin("GET", `/admin/accounts/${acct.id}`);
      const r = await h.admin("PATCH", `/admin/accounts/${acct.id}`, patch);
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe(param);
      expect(r.body.error.message).toMatch(/whole number|integer|at least 1/);
      expect((await h.admin("GET", `/admin/accounts/${acct.id}`)).body).toEqual(before.body);
    });

    test.each([
      [{ amount: -1000, reason: "x" }],
      [{ amount: 0.0000000001, reason: "x" }],
      [{ amount: "ten", reason: "x" }],
      [{ amount: 0, reason: "x" }],
    ])("credits %p → 400 naming amount; no ledger entry", async (body) => {
      const before = await storeState(h, acct.id);
      const r = await h.admin("POST", `/admin/accounts/${acct.id}/credits`, body);
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe("amount");
      expect(await storeState(h, acct.id)).toEqual(before);
    });
  });
});
