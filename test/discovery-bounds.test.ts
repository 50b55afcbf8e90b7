/**
 * An upstream's model list cannot take the server down or rewrite the catalog (issue 29.3):
 * a list of 50,000 ids offers at most SWITCHYARD_UPSTREAM_MODELS_MAX of them, and GET /v1/models
 * and /readyz are computed once per version of the list, not walked per request; a listed
 * catalog id, turbo id or local model id changes nothing (the catalog wins); ids outside the
 * documented characters are never offered, with one log line per refresh; metric series per
 * model are capped, the rest counted as model="other".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream, type ListedModel } from "./support/fake-upstream";
import { billingChecks } from "./support/billing-checks";
import { postChat } from "./support/chat-client";
import { post } from "./support/gateway-client";
import { expectedChatCost } from "./support/expected-cost";
import type { ModelEntry } from "../src/catalog/catalog";

const hi = [{ role: "user", content: "hi" }];
const ids = (n: number, prefix = "m-"): ListedModel[] => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}` }));

describe("discovery is bounded and never shadows the catalog", () => {
  let fake: FakeUpstream;
  let h: Harness;
  let acct: { id: string; key: string };
  const warnings: string[] = [];
  const { charged } = billingChecks(() => ({ h, accountId: acct.id, upstream: fake }));
  const listed = async () => ((await (await fetch(h.base + "/v1/models")).json()) as { data: { id: string; owned_by: string }[] }).data;
  const serve = async (models: ListedModel[]) => {
    fake.serve(models);
    await h.server.services.upstreamModels.refresh();
  };

  beforeAll(async () => {
    fake = startFakeUpstream({}, { models: [{ id: "my-llama" }] });
    h = await startHarness({
      SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "3600", SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_DEFAULT_PRICE: "0.2,0.6",
      SWITCHYARD_METRICS_MAX_MODELS: "2",
    });
    await h.server.services.upstreamModels.ready;
    const log = h.server.services.log;
    const warn = log.warn.bind(log);
    log.warn = (msg, fields) => (warnings.push(`${msg} ${JSON.stringify(fields ?? {})}`), warn(msg, fields));
    acct = await h.account(10);
  });
  afterAll(async () => {
    await h?.stop();
    fake?.stop();
  });

  test("50,000 listed ids (3.5 MB): 1,000 offered (SWITCHYARD_UPSTREAM_MODELS_MAX); the lists are built once, not per request", async () => {
    await serve(ids(50_000));
    const first = await listed();
    expect(first.filter((m) => m.id.startsWith("m-")).length).toBe(1000);
    expect((await fetch(h.base + "/readyz")).status).toBe(200);
    const s = h.server.services;
    // Count the walks over the model list: each request of the old code made one or more.
    let alls = 0;
    let liveChecks = 0;
    const all = s.catalog.all.bind(s.catalog);
    const isLive = s.isLive;
    s.catalog.all = () => (alls++, all());
    s.isLive = (e: ModelEntry) => (liveChecks++, isLive(e));
    try {
      for (let i = 0; i < 3; i++) {
        expect((await fetch(h.base + "/v1/models")).status).toBe(200);
        const ready = (await (await fetch(h.base + "/readyz")).json()) as { models: unknown[] };
        expect(ready.models.length).toBeGreaterThan(1000);
      }
    } finally {
      s.catalog.all = all;
      s.isLive = isLive;
    }
    expect(alls).toBe(0);
    // Only the local models' loaded state is looked at per request.
    expect(liveChecks).toBeLessThan(50);
  });

  test("a listed catalog id, turbo id or local model id changes nothing: listed once, priced and routed as the catalog says", async () => {
    await serve([{ id: "glm-4.6" }, { id: "glm-4.6-turbo" }, { id: "voice-82m" }, { id: "voice-82m-turbo" }, { id: "embedding-300m" }, { id: "my-llama" }]);
    const ids = (await listed()).map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => id === "glm-4.6-turbo").length).toBe(1);
    expect(h.server.services.catalog.all().filter((e) => e.discovered).map((e) => e.id)).toEqual(["my-llama"]);

    let res!: Response;
    const units = await charged(async () => {
      res = await postChat(h.base, acct.key, { model: "glm-4.6-turbo", messages: hi });
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { service_tier: string }).service_tier).toBe("priority");
    // The fake reports 11 prompt and 6 completion tokens: the catalog's turbo price, not the default one.
    expect(units).toBe(expectedChatCost("glm-4.6", 11, 6, true));

    const speech = await post(h, "/v1/audio/speech", acct.key, { model: "voice-82m-turbo", input: "hello", voice: "af_heart" });
    const body = (await speech.json()) as { error: { code: string; message: string } };
    expect(body.error.code).not.toBe("wrong_endpoint");
    expect(body.error.message).not.toContain("/v1/chat/completions");
  });

  test("ids outside the documented characters are never offered, with one log line per refresh", async () => {
    const bad = ["has space", "<img src=x onerror=alert(1)>", "../../etc/passwd", "evil\u202etxt.exe"];
    warnings.length = 0;
    await serve([...bad.map((id) => ({ id })), { id: "my-llama" }]);
    const ids = (await listed()).map((m) => m.id);
    for (const id of bad) expect(ids).not.toContain(id);
    expect(ids).toContain("my-llama");
    for (const id of bad) expect((await postChat(h.base, acct.key, { model: id, messages: hi })).status).toBe(404);
    expect(warnings.filter((w) => w.includes("not offered"))).toHaveLength(1);
    expect(warnings.join("\n")).toContain('"invalid_ids":4');
  });

  test("metric series per model are capped: past SWITCHYARD_METRICS_MAX_MODELS, one model=\"other\" series", async () => {
    await serve(ids(6, "rotating-"));
    for (let i = 0; i < 6; i++) expect((await postChat(h.base, acct.key, { model: `rotating-${i}`, messages: hi })).status).toBe(200);
    // A list that changes again: new ids add no series.
    await serve(ids(6, "later-"));
    for (let i = 0; i < 6; i++) expect((await postChat(h.base, acct.key, { model: `later-${i}`, messages: hi })).status).toBe(200);
    expect((await postChat(h.base, acct.key, { model: "glm-4.6", messages: hi })).status).toBe(404);
    const metrics = await (await fetch(h.base + "/metrics")).text();
    const models = new Set([...metrics.matchAll(/^switchyard_requests_total\{[^}]*model="([^"]+)"/gm)].map((m) => m[1]));
    const discovered = [...models].filter((m): m is string => m !== undefined && (m.startsWith("rotating-") || m.startsWith("later-") || m.startsWith("m-") || m === "my-llama"));
    expect(discovered.length).toBeLessThanOrEqual(2);
    expect(models.has("other")).toBe(true);
    expect(models.has("glm-4.6-turbo")).toBe(true);
    // Route labels name their model (model#index): capped with it.
    const routes = new Set([...metrics.matchAll(/^switchyard_upstream_attempts_total\{[^}]*route="([^"]+)"/gm)].map((m) => m[1]!.replace(/#\d+$/, "")));
    expect([...routes].filter((r) => r.startsWith("rotating-") || r.startsWith("later-")).length).toBeLessThanOrEqual(2);
    expect(routes.has("other")).toBe(true);
  });
});
