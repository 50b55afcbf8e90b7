/**
 * "Serve your own model" (README): an engine that serves only `my-llama`, the gateway pointed at it
 * with a default price. Only what the engine lists is offered (models list, dashboard routes), a
 * model the catalog lacks is served and billed at the default price, a catalog model nobody
 * serves is a 404 (not a 502 "please retry"), and the lists follow the engine as it changes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream, type ListedModel } from "./support/fake-upstream";
import { billingChecks } from "./support/billing-checks";
import { postChat } from "./support/chat-client";
import { usdToUnits } from "./support/expected-cost";
import { serviceState } from "../src/dashboard/service-state";

const MY_LLAMA: ListedModel = { id: "my-llama", owned_by: "vllm", max_model_len: 8192 };
const hi = [{ role: "user", content: "hi" }];

/** The default price 0.2,0.6 USD per million tokens, in integer units, rounded up as the ledger does. */
function defaultPriceCost(input: number, output: number): number {
  const raw = BigInt(input) * usdToUnits("0.2") + BigInt(output) * usdToUnits("0.6");
  return Number((raw + 999_999n) / 1_000_000n);
}

describe("an engine serving one model, with SWITCHYARD_DEFAULT_PRICE", () => {
  let fake: FakeUpstream;
  let h: Harness;
  let acct: { id: string; key: string };
  const { charged } = billingChecks(() => ({ h, accountId: acct.id, upstream: fake }));
  const listedIds = async () => ((await (await fetch(h.base + "/v1/models")).json()) as { data: { id: string }[] }).data.map((m) => m.id);

  beforeAll(async () => {
    fake = startFakeUpstream({}, { models: [MY_LLAMA] });
    h = await startHarness({ SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "60", SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_DEFAULT_PRICE: "0.2,0.6", SWITCHYARD_MODEL_ALIASES: JSON.stringify({ "gpt-*": "my-llama" }) });
    // Start-up waits a moment for the first list; this waits for it whatever that took.
    await h.server.services.upstreamModels.ready;
    acct = await h.account(10);
  });
  afterAll(async () => {
    await h.stop();
    fake.stop();
  });

  test("GET /v1/models lists my-llama and no catalog model, with the engine's context window", async () => {
    const body = (await (await fetch(h.base + "/v1/models")).json()) as { data: any[] };
    expect(body.data.map((m) => m.id)).toEqual(["my-llama"]);
    expect(body.data[0]).toMatchObject({
      id: "my-llama", owned_by: "vllm", type: "chat", context_window: 8192, max_output_tokens: 8192,
      pricing: { currency: "USD", input_per_million_tokens: "0.2", output_per_million_tokens: "0.6" },
    });
    const one = await fetch(h.base + "/v1/models/my-llama");
    expect(one.status).toBe(200);
  });

  test("a chat to my-llama is served and billed at the default price, to the unit", async () => {
    let res!: Response;
    const units = await charged(async () => {
      res = await postChat(h.base, acct.key, { model: "my-llama", messages: hi });
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.model).toBe("my-llama");
    expect(fake.requests.at(-1)!.model).toBe("my-llama");
    // The fake reports 11 prompt tokens and 6 completion tokens.
    expect(units).toBe(defaultPriceCost(11, 6));
    const row = h.db.query("SELECT model, amount FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY id DESC LIMIT 1").get(acct.id) as { model: string; amount: number };
    expect(row).toEqual({ model: "my-llama", amount: -defaultPriceCost(11, 6) });
  });

  test("glm-4.6, which the engine does not serve, is a 404 model_not_found and never reaches it", async () => {
    const before = fake.requests.length;
    const res = await postChat(h.base, acct.key, { model: "glm-4.6", messages: hi });
    expect(res.status).toBe(404);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe("model_not_found");
    expect(body.error.message).toContain("glm-4.6");
    expect(body.error.message).not.toMatch(/retry/i);
    expect(fake.requests.length).toBe(before);
    expect((await fetch(h.base + "/v1/models/glm-4.6")).status).toBe(404);
  });

  test("an alias maps a client's own model name to the served model, billed as it", async () => {
    let res!: Response;
    const units = await charged(async () => {
      res = await postChat(h.base, acct.key, { model: "gpt-4o-mini", messages: hi });
    });
    expect(res.status).toBe(200);
    expect(fake.requests.at(-1)!.model).toBe("my-llama");
    expect(units).toBe(defaultPriceCost(11, 6));
  });

  test("the dashboard's route table shows only the served model", () => {
    const state = serviceState(h.server.services);
    expect(state.routes.map((r) => r.model)).toEqual(["my-llama"]);
  });

  test("an engine's own id with a slash and capitals is served, listed and found at /v1/models/Qwen/Qwen3-8B", async () => {
    fake.serve([MY_LLAMA, { id: "Qwen/Qwen3-8B" }]);
    await h.server.services.upstreamModels.refresh();
    expect(await listedIds()).toEqual(["my-llama", "Qwen/Qwen3-8B"]);
    const one = await fetch(h.base + "/v1/models/Qwen/Qwen3-8B");
    expect(one.status).toBe(200);
    // No max_model_len listed: SWITCHYARD_DEFAULT_CONTEXT_WINDOW (32768).
    expect(await one.json()).toMatchObject({ id: "Qwen/Qwen3-8B", owned_by: "vllm", context_window: 32768 });
    expect((await fetch(h.base + "/v1/models/" + encodeURIComponent("Qwen/Qwen3-8B"))).status).toBe(200);
    const res = await postChat(h.base, acct.key, { model: "Qwen/Qwen3-8B", messages: hi });
    expect(res.status).toBe(200);
    expect(fake.requests.at(-1)!.model).toBe("Qwen/Qwen3-8B");
  });

  test("an engine that stops listing a model stops offering it; one that cannot answer keeps its last list", async () => {
    fake.serve([{ id: "Qwen/Qwen3-8B" }]);
    await h.server.services.upstreamModels.refresh();
    expect(await listedIds()).toEqual(["Qwen/Qwen3-8B"]);
    expect((await postChat(h.base, acct.key, { model: "my-llama", messages: hi })).status).toBe(404);

    fake.serve(null); // GET /v1/models now answers 404
    await h.server.services.upstreamModels.refresh();
    expect(await listedIds()).toEqual(["Qwen/Qwen3-8B"]);

    fake.serve([MY_LLAMA]);
    await h.server.services.upstreamModels.refresh();
    expect(await listedIds()).toEqual(["my-llama"]);
  });
});

describe("pinned routes and engines without a model list", () => {
  let fake: FakeUpstream;
  let silent: FakeUpstream;
  let h: Harness;

  beforeAll(async () => {
    fake = startFakeUpstream({}, { models: [MY_LLAMA] });
    silent = startFakeUpstream(); // answers 404 to GET /v1/models
    h = await startHarness({
      SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "60",
      SWITCHYARD_ROUTES: JSON.stringify({
        upstreams: { engine: { base_url: fake.url }, legacy: { base_url: silent.url } },
        models: {
          "glm-4.6": [{ upstream: "engine", model: "glm-unlisted", pinned: true }],
          "kimi-k2-instruct": [{ upstream: "engine", model: "kimi-unlisted" }],
          "minimax-m2": [{ upstream: "legacy" }],
        },
      }),
    });
    await h.server.services.upstreamModels.refresh();
  });
  afterAll(async () => {
    await h.stop();
    fake.stop();
    silent.stop();
  });

  test("a pinned route serves a model its engine does not list; an unpinned one does not; an engine with no list serves its routes", async () => {
    const ids = ((await (await fetch(h.base + "/v1/models")).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(ids).toContain("glm-4.6");
    expect(ids).toContain("minimax-m2");
    expect(ids).not.toContain("kimi-k2-instruct");
    // Without SWITCHYARD_DEFAULT_PRICE, my-llama (listed, but in no catalog) is not offered.
    expect(ids).not.toContain("my-llama");
    expect(fake.listRequests).toBeGreaterThan(0);
    expect(silent.listRequests).toBeGreaterThan(0);
  });
});
