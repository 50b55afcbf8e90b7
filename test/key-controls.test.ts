/**
 * Per-key controls over HTTP (docs/operate.md, "Keys: limits, expiry, models"), on both stores: set
 * through POST /admin/accounts/{id}/keys and PATCH /admin/keys/{id} with OpenRouter's fields,
 * shown in the key list and GET /v1/key, and enforced: a key over its limit → 402
 * key_limit_exceeded naming the limit and its reset; expired → 401 key_expired; a model not on its
 * list → 403 model_not_allowed naming only its own models; its own rate → 429 with Retry-After
 * and the x-ratelimit headers of the tighter of key and account.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Harness } from "./support/harness";
import { startHarness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { chat } from "./support/gateway-client";
import { describeEachStore } from "./support/stores";

describeEachStore("per-key controls", (store) => {
  let fake: FakeUpstream;
  let h: Harness;

  beforeAll(async () => {
    fake = startFakeUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_MODEL_ALIASES: '{"claude-*":"glm-4.6"}' }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  /** A funded account and a key with these controls. */
  async function keyWith(controls: Record<string, unknown>, credits = 10) {
    const a = await h.admin("POST", "/admin/accounts", { name: "kc", credits });
    const k = await h.admin("POST", `/admin/accounts/${a.body.id}/keys`, { name: "limited", ...controls });
    expect(k.status).toBe(201);
    return { account: a.body.id as string, id: k.body.id as string, key: k.body.key as string, created: k.body };
  }

  const getKey = async (key: string) => (await (await fetch(h.base + "/v1/key", { headers: { authorization: `Bearer ${key}` } })).json()) as any;

  describe("admin API", () => {
    test("create with OpenRouter's fields: shown back in USD and ISO 8601, and in the key list", async () => {
      const k = await keyWith({ limit: 2.5, limit_reset: "weekly", expires_at: "2099-01-02T03:04:05Z", models: ["glm-4.6", "claude-3"], rate_limit_rpm: 7 });
      expect(k.created).toMatchObject({
        limit: 2.5, limit_remaining: 2.5, limit_reset: "weekly", usage: 0, expires_at: "2099-01-02T03:04:05.000Z", expired: false,
        models: ["glm-4.6", "claude-3"], rate_limit_rpm: 7,
      });
      expect(k.created.key.startsWith("sy-")).toBe(true);
      const list = await h.admin("GET", `/admin/accounts/${k.account}/keys`);
      expect(list.body.data[0]).toMatchObject({ id: k.id, limit: 2.5, limit_reset: "weekly", models: ["glm-4.6", "claude-3"], rate_limit_rpm: 7 });
      expect(list.body.data[0].hash).toBeUndefined();
      expect(list.body.data[0].key).toBeUndefined();
    });

    test("PATCH /admin/keys/{id} changes fields named, leaves the rest, null clears; unknown key 404", async () => {
      const k = await keyWith({ limit: 1, models: ["glm-4.6"] });
      const p = await h.admin("PATCH", `/admin/keys/${k.id}`, { limit: "0.25", limit_reset: "daily" });
      expect(p.status).toBe(200);
      expect(p.body).toMatchObject({ limit: 0.25, limit_reset: "daily", models: ["glm-4.6"], name: "limited" });
      const cleared = await h.admin("PATCH", `/admin/keys/${k.id}`, { limit: null, models: null });
      expect(cleared.body).toMatchObject({ limit: null, limit_remaining: null, models: null, limit_reset: "daily" });
      expect((await h.admin("PATCH", "/admin/keys/key_nope", { limit: 1 })).status).toBe(404);
    });

    const bad: [Record<string, unknown>, string][] = [
      [{ limit: -1 }, "limit"],
      [{ limit: "1.2.3" }, "limit"],
      [{ limit_reset: "hourly" }, "limit_reset"],
      [{ expires_at: "tomorrow" }, "expires_at"],
      [{ expires_at: "2099-01-01T00:00:00" }, "expires_at"],
      [{ models: ["glm-4.6", "no-such-model"] }, "models[1]"],
      [{ models: [] }, "models"],
      [{ rate_limit_rpm: 0 }, "rate_limit_rpm"],
      [{ rate_limit_rpm: 1.5 }, "rate_limit_rpm"],
      [{ limits: 5 }, "limits"],
    ];
    for (const [body, param] of bad) {
      test(`${JSON.stringify(body)} → 400 naming ${param}, on create and on PATCH; nothing created`, async () => {
        const a = await h.admin("POST", "/admin/accounts", { name: "bad", credits: 1 });
        const c = await h.admin("POST", `/admin/accounts/${a.body.id}/keys`, body);
        expect(c.status).toBe(400);
        expect(c.body.error.param).toBe(param);
        expect((await h.admin("GET", `/admin/accounts/${a.body.id}/keys`)).body.data).toEqual([]);
        const k = await h.admin("POST", `/admin/accounts/${a.body.id}/keys`, {});
        const p = await h.admin("PATCH", `/admin/keys/${k.body.id}`, body);
        expect(p.status).toBe(400);
        expect(p.body.error.param).toBe(param);
      });
    }
  });

  describe("enforcement", () => {
    test("a key over its limit: 402 key_limit_exceeded naming the limit and when it resets; the account's other key still works", async () => {
      const k = await keyWith({ limit: 0.000001, limit_reset: "monthly" });
      const res = await chat(h, k.key, { max_tokens: 16 });
      expect(res.status).toBe(402);
      const body = (await res.json()) as any;
      expect(body.error.code).toBe("key_limit_exceeded");
      expect(body.error.message).toContain("0.000001 USD (monthly)");
      expect(body.error.message).toMatch(/resets at \d{4}-\d{2}-01T00:00:00\.000Z/);
      const other = await h.admin("POST", `/admin/accounts/${k.account}/keys`, {});
      expect((await chat(h, other.body.key, { max_tokens: 16 })).status).toBe(200);
      // Raising the limit bites on the next request.
      await h.admin("PATCH", `/admin/keys/${k.id}`, { limit: 5 });
      const ok = await chat(h, k.key, { max_tokens: 16 });
      expect(ok.status).toBe(200);
      const cost = Number(ok.headers.get("x-request-cost"));
      const info = await getKey(k.key);
      expect(info.data).toMatchObject({ limit: 5, limit_reset: "monthly", usage: cost, usage_monthly: cost, usage_daily: cost });
      expect(info.data.limit_remaining).toBeCloseTo(5 - cost, 9);
    });

    test("expired: 401 key_expired on model endpoints and GET /v1/key; a new expiry in the future lets it in again", async () => {
      const k = await keyWith({ expires_at: "2099-12-31T00:00:00Z" });
      expect((await getKey(k.key)).data.expires_at).toBe("2099-12-31T00:00:00.000Z");
      await h.admin("PATCH", `/admin/keys/${k.id}`, { expires_at: "2020-01-01T00:00:00Z" });
      const res = await chat(h, k.key, { max_tokens: 16 });
      expect(res.status).toBe(401);
      const body = (await res.json()) as any;
      expect(body.error.code).toBe("key_expired");
      expect(body.error.message).toContain("2020-01-01T00:00:00.000Z");
      expect((await fetch(h.base + "/v1/key", { headers: { authorization: `Bearer ${k.key}` } })).status).toBe(401);
      expect((await h.admin("GET", `/admin/accounts/${k.account}/keys`)).body.data[0].expired).toBe(true);
      await h.admin("PATCH", `/admin/keys/${k.id}`, { expires_at: null });
      expect((await chat(h, k.key, { max_tokens: 16 })).status).toBe(200);
    });

    test("models: an alias on the list allows its target and itself; another model is 403 model_not_allowed naming only the key's models", async () => {
      const k = await keyWith({ models: ["claude-sonnet"] });
      expect((await chat(h, k.key, { model: "glm-4.6", max_tokens: 16 })).status).toBe(200);
      expect((await chat(h, k.key, { model: "claude-sonnet", max_tokens: 16 })).status).toBe(200);
      const res = await chat(h, k.key, { model: "minimax-m2", max_tokens: 16 });
      expect(res.status).toBe(403);
      const body = (await res.json()) as any;
      expect(body.error.code).toBe("model_not_allowed");
      expect(body.error.param).toBe("model");
      expect(body.error.message).toContain("claude-sonnet");
      expect(body.error.message).not.toContain("glm-4.6");
      expect(body.error.message).not.toContain("kimi");
      // Nothing was held or charged for the refused request.
      const ledger = await h.admin("GET", `/admin/accounts/${k.account}/ledger`);
      expect(ledger.body.data.filter((e: any) => e.kind === "charge").length).toBe(2);
    });

    test("its own rate: the key's 3 per minute refuse the 4th with 429, Retry-After and the key's figures; before that the tighter figures", async () => {
      const k = await keyWith({ rate_limit_rpm: 3 });
      const first = await chat(h, k.key, { max_tokens: 16 });
      expect(first.status).toBe(200);
      // Account: 600/min (the default); key: 3/min, the tighter one is reported.
      expect(first.headers.get("x-ratelimit-limit-requests")).toBe("3");
      expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("2");
      await chat(h, k.key, { max_tokens: 16 });
      await chat(h, k.key, { max_tokens: 16 });
      const res = await chat(h, k.key, { max_tokens: 16 });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get("x-ratelimit-limit-requests")).toBe("3");
      expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("0");
      const body = (await res.json()) as any;
      expect(body.error.code).toBe("rate_limit_exceeded");
      expect(body.error.message).toContain("3 requests per minute for this key");
      // The account's other keys are not held back by this key's rate.
      const other = await h.admin("POST", `/admin/accounts/${k.account}/keys`, {});
      const o = await chat(h, other.body.key, { max_tokens: 16 });
      expect(o.status).toBe(200);
      expect(o.headers.get("x-ratelimit-limit-requests")).toBe("600");
      // An account tighter than the key is the one reported.
      await h.admin("PATCH", `/admin/accounts/${k.account}`, { rate_limit_rpm: 100 });
      const k2 = await h.admin("POST", `/admin/accounts/${k.account}/keys`, { rate_limit_rpm: 1000 });
      const r2 = await chat(h, k2.body.key, { max_tokens: 16 });
      expect(r2.headers.get("x-ratelimit-limit-requests")).toBe("100");
    });
  });
});
