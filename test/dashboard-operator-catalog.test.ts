/**
 * The operator models page's editing API (/dashboard/api/operator/catalog/*) over plain HTTP:
 * operator sessions only, CSRF enforced like every dashboard write, prices as decimal strings,
 * 400s naming the field with nothing written, an upstream's key never echoed, and each change live
 * at once in /v1/models and the admin API (the same operations underneath).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ADMIN_TOKEN, startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { dashboardSession, type DashboardSession } from "./support/dashboard-session";

const KEY = "sk-upstream-secret-never-shown-0123456789";
let fake: FakeUpstream;
let h: Harness;
let op: DashboardSession;
let as: DashboardSession;

const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
const publicIds = async () => ((await (await fetch(h.base + "/v1/models")).json()) as any).data.map((m: any) => m.id) as string[];

beforeAll(async () => {
  fake = startFakeUpstream();
  h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url });
  const alice = await h.account(5, "alice");
  op = await dashboardSession(h, "operator", ADMIN_TOKEN);
  as = await dashboardSession(h, "account", alice.key);
});
afterAll(async () => {
  await h?.stop();
  fake?.stop();
});

describe("operator catalog editing API", () => {
  test("operator only: no session 401, an account session 403, on reads and writes alike", async () => {
    const calls: [string, string, unknown][] = [
      ["GET", "/operator/catalog/models", undefined],
      ["POST", "/operator/catalog/models", { id: "x-model", kind: "chat", owned_by: "x", context_window: 1000, pricing: { input_per_million: "1", output_per_million: "1" } }],
      ["PATCH", "/operator/catalog/models/glm-4.6", { enabled: false }],
      ["GET", "/operator/catalog/upstreams", undefined],
      ["POST", "/operator/catalog/upstreams", { name: "x", base_url: "http://127.0.0.1:1/v1" }],
      ["GET", "/operator/catalog/routes", undefined],
      ["PUT", "/operator/catalog/routes/glm-4.6", { routes: [] }],
      ["DELETE", "/operator/catalog/routes/glm-4.6", undefined],
    ];
    for (const [method, path, body] of calls) {
      expect({ path, status: (await as.call(method, path, body)).status }).toEqual({ path, status: 403 });
      const anonymous = await fetch(h.base + "/dashboard/api" + path, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      expect({ path, status: anonymous.status }).toEqual({ path, status: 401 });
    }
    expect(await publicIds()).toContain("glm-4.6");
    expect((await h.admin("GET", "/admin/upstreams")).body.data.map((u: any) => u.name)).toEqual(["default"]);
  });

  test("CSRF: a write without the session's token, or from another site, is refused and writes nothing", async () => {
    const body = { id: "csrf-model", kind: "chat", owned_by: "x", context_window: 1000, pricing: { input_per_million: "1", output_per_million: "1" } };
    for (const [headers, code] of [
      [{ "x-csrf-token": "" }, "csrf_token_invalid"],
      [{ "x-csrf-token": "wrong-token" }, "csrf_token_invalid"],
      [{ "sec-fetch-site": "cross-site" }, "cross_site_request"],
      [{ origin: "http://evil.example" }, "cross_site_request"],
    ] as const) {
      const r = await json(await op.call("POST", "/operator/catalog/models", body, headers));
      expect({ status: r.status, code: r.body.error.code }).toEqual({ status: 403, code });
    }
    const form = await json(await op.call("POST", "/operator/catalog/models", undefined, { "content-type": "application/x-www-form-urlencoded" }));
    expect({ status: form.status, code: form.body.error.code }).toEqual({ status: 400, code: "unsupported_media_type" });
    expect((await h.admin("GET", "/admin/models/csrf-model")).status).toBe(404);
  });

  test("a model added with decimal-string prices is live at once; its price changes, it is disabled, then removed", async () => {
    const created = await json(await op.call("POST", "/operator/catalog/models", {
      id: "acme/chat-1", kind: "chat", owned_by: "acme", context_window: 32000, max_output_tokens: 4096,
      pricing: { input_per_million: "0.25", output_per_million: "1.10" }, input_modalities: ["text"], turbo: true,
    }));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: "acme/chat-1", source: "admin", enabled: true, live: true, pricing: { input_per_million: 0.25, output_per_million: 1.1 } });
    expect(await publicIds()).toContain("acme/chat-1");

    const repriced = await op.call("PATCH", "/operator/catalog/models/acme/chat-1", { pricing: { input_per_million: "0.30" }, context_window: 64000 });
    const text = await repriced.text();
    expect(repriced.status).toBe(200);
    expect(text).toContain('"input_per_million":0.3,"output_per_million":1.1');
    expect(JSON.parse(text)).toMatchObject({ context_window: 64000 });
    expect((await h.admin("GET", "/admin/models/acme/chat-1")).body.pricing).toEqual({ input_per_million: 0.3, output_per_million: 1.1 });

    expect((await json(await op.call("PATCH", "/operator/catalog/models/acme%2Fchat-1", { enabled: false }))).body).toMatchObject({ enabled: false, live: false });
    expect(await publicIds()).not.toContain("acme/chat-1");
    expect((await json(await op.call("DELETE", "/operator/catalog/models/acme/chat-1"))).body).toEqual({ id: "acme/chat-1", object: "catalog_entry", deleted: true, source: null });
    expect((await json(await op.call("GET", "/operator/catalog/models"))).body.data.map((m: any) => m.id)).not.toContain("acme/chat-1");
  });

  test("bad input is a 400 naming the field, and nothing is written; prices as numbers are refused", async () => {
    const model = { id: "bad-model", kind: "chat", owned_by: "x", context_window: 1000, pricing: { input_per_million: "1", output_per_million: "1" } };
    for (const [method, path, body, param] of [
      ["POST", "/operator/catalog/models", { ...model, pricing: { input_per_million: 0.2, output_per_million: "1" } }, "pricing.input_per_million"],
      ["POST", "/operator/catalog/models", { ...model, pricing: { input_per_million: "abc", output_per_million: "1" } }, "pricing.input_per_million"],
      ["POST", "/operator/catalog/models", { ...model, pricing: { input_per_million: "-1", output_per_million: "1" } }, "pricing.input_per_million"],
      ["PATCH", "/operator/catalog/models/glm-4.6", { pricing: { output_per_million: 2 } }, "pricing.output_per_million"],
      ["POST", "/operator/catalog/upstreams", { name: "u1", base_url: "ftp://nowhere" }, "base_url"],
      ["POST", "/operator/catalog/upstreams", { name: "bad name!", base_url: "http://127.0.0.1:1/v1" }, "name"],
      ["PUT", "/operator/catalog/routes/glm-4.6", { routes: [{ upstream: "nowhere" }] }, "routes[0].upstream"],
      ["PUT", "/operator/catalog/routes/glm-4.6", { routes: [{ upstream: "default", weight: -1 }] }, "routes[0].weight"],
      // Past the documented ranges (README, "The model catalog"), and a key from the server's environment.
      ["POST", "/operator/catalog/models", { ...model, owned_by: "acme\r\n<script>x</script>" }, "owned_by"],
      ["POST", "/operator/catalog/models", { ...model, created: 1e300 }, "created"],
      ["POST", "/operator/catalog/models", { ...model, context_window: 1e20 }, "context_window"],
      ["POST", "/operator/catalog/models", { ...model, pricing: { input_per_million: "100000", output_per_million: "1" } }, "pricing.input_per_million"],
      ["POST", "/operator/catalog/upstreams", { name: "u2", base_url: "http://127.0.0.1:1/v1", key_env: "AWS_SECRET_ACCESS_KEY" }, "key_env"],
    ] as const) {
      const r = await json(await op.call(method, path, body));
      expect({ path, status: r.status, param: r.body.error.param }).toEqual({ path, status: 400, param });
      expect(r.body.error.message).toContain(param);
    }
    expect((await h.admin("GET", "/admin/models/bad-model")).status).toBe(404);
    expect((await h.admin("GET", "/admin/models/glm-4.6")).body.source).toBe("embedded");
    expect((await h.admin("GET", "/admin/routes/glm-4.6")).body.source).toBe("default");
  });

  test("upstreams and routes: the key is never echoed; routes set, taken offline and removed", async () => {
    const created = await op.call("POST", "/operator/catalog/upstreams", { name: "engine-b", base_url: `${fake.url}`, key: KEY, timeouts: { connect_ms: 2000, first_byte_ms: 30000, idle_ms: 30000 }, keep_alive: false });
    const createdText = await created.text();
    expect(created.status).toBe(201);
    expect(createdText).not.toContain(KEY);
    expect(JSON.parse(createdText)).toMatchObject({ name: "engine-b", source: "admin", has_key: true, keep_alive: false, timeouts: { connect_ms: 2000, first_byte_ms: 30000, idle_ms: 30000 } });
    const edited = await op.call("PATCH", "/operator/catalog/upstreams/engine-b", { timeouts: { connect_ms: 3000, first_byte_ms: 30000, idle_ms: 30000 } });
    const editedText = await edited.text();
    expect(edited.status).toBe(200);
    expect(JSON.parse(editedText)).toMatchObject({ has_key: true, timeouts: { connect_ms: 3000 } });
    const listText = await (await op.call("GET", "/operator/catalog/upstreams")).text();
    for (const t of [editedText, listText]) expect(t).not.toContain(KEY);

    const routes = await json(await op.call("PUT", "/operator/catalog/routes/glm-4.6", { routes: [{ upstream: "engine-b", model: "glm-upstream", weight: 2, priority: false, pinned: true }] }));
    expect(routes.status).toBe(200);
    expect(routes.body).toMatchObject({ model: "glm-4.6", source: "admin", routes: [{ index: 0, upstream: "engine-b", model: "glm-upstream", weight: 2, pinned: true }] });
    // The read-only models page serves the new route, and "test this route" reaches that upstream with its key.
    const page = (await json(await op.call("GET", "/operator/models"))).body.data.find((m: any) => m.id === "glm-4.6");
    expect(page.routes.map((r: any) => r.upstream)).toEqual(["engine-b"]);
    const before = fake.requests.length;
    const tested = await json(await op.call("POST", "/operator/routes/test", { model: "glm-4.6", route: page.routes[0].route }));
    expect(tested.body).toMatchObject({ ok: true, status: 200 });
    expect(fake.requests[before]!.model).toBe("glm-upstream");

    expect((await json(await op.call("DELETE", "/operator/catalog/upstreams/engine-b"))).body.error.param).toBe("name");
    await op.call("PUT", "/operator/catalog/routes/glm-4.6", { routes: [] });
    expect(await publicIds()).not.toContain("glm-4.6");
    expect((await json(await op.call("DELETE", "/operator/catalog/routes/glm-4.6"))).body).toMatchObject({ deleted: true });
    expect(await publicIds()).toContain("glm-4.6");
    expect((await json(await op.call("DELETE", "/operator/catalog/upstreams/engine-b"))).body).toMatchObject({ deleted: true });
  });
});
