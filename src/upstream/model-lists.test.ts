/**
 * Which routes are served, from what each upstream's GET /v1/models says (README, "Serve your own
 * model"): listed or pinned routes are served; an upstream that never answered serves all its
 * routes; one that fails later keeps its last list; the offered models carry the listed context
 * window and owned_by, never the upstream's name or host.
 */
import { describe, expect, test } from "bun:test";
import { ConfiguredRouteRegistry } from "./registry";
import { ModelListRefresh, parseModelList, UpstreamModelLists, type ListedModel, type ModelListAnswer } from "./model-lists";
import type { UpstreamSpec } from "./routes-config";
import { loadConfig } from "../config";

const listed = (...ids: string[]): ListedModel[] => ids.map((id) => ({ id, ownedBy: null, created: null, maxModelLen: null }));

/** A registry over one default upstream (and a routes document), whose lists come from `answers`. */
function registry(answers: Map<string, ListedModel[] | ModelListAnswer | Error>, routes: unknown = null) {
  const lists = new UpstreamModelLists(async (u: UpstreamSpec) => {
    const a = answers.get(u.name);
    if (a === undefined || a instanceof Error) throw a ?? new Error("unreachable");
    return a;
  });
  const r = new ConfiguredRouteRegistry(
    { upstreamUrl: "http://10.9.9.9:8000/v1", upstreamKey: null, routes: routes === null ? null : JSON.stringify(routes) },
    () => {}, {}, lists,
  );
  const loaded = r.load();
  return { r, refresh: async () => (await loaded, lists.refresh(r.upstreams())) };
}

describe("served routes", () => {
  test("before any answer every route is served; after one, only listed models", async () => {
    const answers = new Map<string, ListedModel[] | Error>();
    const { r, refresh } = registry(answers);
    expect(r.hasRoute("glm-4.6")).toBe(true);
    await refresh(); // unreachable: still nothing known
    expect(r.hasRoute("glm-4.6")).toBe(true);
    answers.set("default", listed("my-llama"));
    await refresh();
    expect(r.hasRoute("glm-4.6")).toBe(false);
    expect(r.unlisted("glm-4.6")).toBe(true);
    expect(r.plan("glm-4.6", "default")).toEqual([]);
    expect(r.hasRoute("my-llama")).toBe(true);
    expect(r.offered().map((m) => m.id)).toEqual(["my-llama"]);
    expect(r.snapshot(["glm-4.6", "my-llama"]).map((s) => s.model)).toEqual(["my-llama"]);
  });

  test("an upstream that stops answering keeps its last list", async () => {
    const answers = new Map<string, ListedModel[] | Error>([["default", listed("my-llama")]]);
    const { r, refresh } = registry(answers);
    await refresh();
    const version = r.offeredVersion();
    answers.set("default", new Error("connect refused"));
    await refresh();
    expect(r.hasRoute("my-llama")).toBe(true);
    expect(r.hasRoute("glm-4.6")).toBe(false);
    expect(r.offeredVersion()).toBe(version);
  });

  test("a pinned route is served although its upstream does not list the model", async () => {
    const answers = new Map<string, ListedModel[] | Error>([["v", listed("other")]]);
    const { r, refresh } = registry(answers, {
      upstreams: { v: { base_url: "http://10.9.9.8:8000/v1" } },
      models: { "glm-4.6": [{ upstream: "v", model: "GLM", pinned: true }], "kimi-k2-instruct": [{ upstream: "v", model: "kimi" }] },
    });
    await refresh();
    expect(r.hasRoute("glm-4.6")).toBe(true);
    expect(r.hasRoute("kimi-k2-instruct")).toBe(false);
    expect(r.offered().map((m) => m.id)).toEqual(["glm-4.6"]);
  });
});

describe("parseModelList", () => {
  const upstream = { name: "gpu-box-7", baseUrl: "http://gpu7.internal:8000/v1" };
  test("vLLM's answer: ids, owned_by, max_model_len", () => {
    const text = JSON.stringify({ object: "list", data: [{ id: "Qwen/Qwen3-8B", object: "model", created: 1, owned_by: "vllm", max_model_len: 40960 }, { id: "x" }] });
    expect(parseModelList(text, upstream)!.models).toEqual([
      { id: "Qwen/Qwen3-8B", ownedBy: "vllm", created: 1, maxModelLen: 40960 },
      { id: "x", ownedBy: null, created: null, maxModelLen: null },
    ]);
  });
  test("an owned_by naming the upstream or its host is dropped; bad entries are skipped; a non-list is null", () => {
    const text = JSON.stringify({ data: [{ id: "a", owned_by: "gpu-box-7" }, { id: "b", owned_by: "GPU7.internal:8000" }, { id: 5 }, { id: "" }, null] });
    expect(parseModelList(text, upstream)!.models.map((m) => [m.id, m.ownedBy])).toEqual([["a", null], ["b", null]]);
    expect(parseModelList("<html>", upstream)).toBeNull();
    expect(parseModelList(JSON.stringify({ models: [] }), upstream)).toBeNull();
  });
});

describe("a list is read within bounds", () => {
  const upstream = { name: "gpu-box-7", baseUrl: "http://gpu7.internal:8000/v1" };
  test("100,000 ids: the first ones up to the cap are kept, the rest only counted, in one pass", () => {
    const text = JSON.stringify({ data: Array.from({ length: 100_000 }, (_, i) => ({ id: `m-${i}` })) });
    const list = parseModelList(text, upstream, 1000)!;
    expect(list.models.length).toBe(1000);
    expect(list.models.at(-1)!.id).toBe("m-999");
    expect([list.invalid, list.overCap]).toEqual([0, 99_000]);
  });
  test("ids outside the public id rule are counted (a route may name them; discovery never offers them)", () => {
    const bad = ["has space", "<b>x</b>", "../../etc/passwd", "evil\u202etxt"];
    const list = parseModelList(JSON.stringify({ data: [...bad, "ok-1", "ok-1"].map((id) => ({ id })) }), upstream)!;
    expect(list.models.map((m) => m.id)).toEqual([...bad, "ok-1"]);
    expect(list.invalid).toBe(bad.length);
  });
  test("owned_by, created and max_model_len outside the catalog's ranges are left out", () => {
    const text = JSON.stringify({ data: [
      { id: "a", owned_by: "x".repeat(65), created: 1e300, max_model_len: 1e20 },
      { id: "b", owned_by: "lab\r\nX-Evil: 1", created: 4_102_444_801, max_model_len: 100_000_001 },
      { id: "c", owned_by: "<script>", created: -1 },
      { id: "d", owned_by: "Mistral AI", created: 1_700_000_000, max_model_len: 131072 },
    ] });
    expect(parseModelList(text, upstream)!.models.map((m) => [m.ownedBy, m.created, m.maxModelLen])).toEqual([
      [null, null, null], [null, null, null], [null, null, null], ["Mistral AI", 1_700_000_000, 131072],
    ]);
  });
  test("what a refresh left out is reported once per upstream and refresh, not once per id", async () => {
    const reports: unknown[] = [];
    const answer = parseModelList(JSON.stringify({ data: [...Array.from({ length: 50 }, (_, i) => ({ id: `bad id ${i}` })), ...Array.from({ length: 20 }, (_, i) => ({ id: `m-${i}` }))] }), upstream, 60)!;
    const lists = new UpstreamModelLists(async () => answer, () => {}, (name, dropped) => reports.push([name, dropped]));
    const u = { name: "u", baseUrl: "http://10.9.9.9:8000/v1" } as UpstreamSpec;
    await lists.refresh([u]);
    expect(reports).toEqual([["u", { invalid: 50, overCap: 10, kept: 60 }]]);
    await lists.refresh([u]);
    expect(reports.length).toBe(2);
  });
  test("a list cut at the cap never takes a route out of service; a whole list does", async () => {
    const answers = new Map<string, ListedModel[] | ModelListAnswer | Error>([["default", { models: listed("my-llama"), invalid: 0, overCap: 5 }]]);
    const { r, refresh } = registry(answers);
    await refresh();
    expect(r.hasRoute("glm-4.6")).toBe(true);
    expect(r.offered().map((m) => m.id)).toEqual(["my-llama"]);
    answers.set("default", listed("my-llama"));
    await refresh();
    expect(r.hasRoute("glm-4.6")).toBe(false);
  });
  test("the default upstream's ids outside the id rule are not offered", async () => {
    const answers = new Map<string, ListedModel[] | ModelListAnswer | Error>([["default", listed("ok-model", "not ok", "<x>")]]);
    const { r, refresh } = registry(answers);
    await refresh();
    expect(r.offered().map((m) => m.id)).toEqual(["ok-model"]);
  });
});

test("SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS=0 never asks", async () => {
  let asked = 0;
  const lists = new UpstreamModelLists(async () => (asked++, []));
  const refresh = new ModelListRefresh(lists, () => [{ name: "u" } as UpstreamSpec], 0);
  await refresh.start(1000);
  await refresh.refresh();
  expect(asked).toBe(0);
});

test("the new settings: defaults, and errors naming the variable and the rule", () => {
  const c = loadConfig({});
  expect([c.upstreamModelsRefreshSeconds, c.defaultPrice, c.defaultContextWindow, c.upstreamModelsMax]).toEqual([60, null, 32768, 1000]);
  expect(() => loadConfig({ SWITCHYARD_UPSTREAM_MODELS_MAX: "0" })).toThrow("SWITCHYARD_UPSTREAM_MODELS_MAX");
  expect(loadConfig({ SWITCHYARD_DEFAULT_PRICE: " 0.2 , 0.6 " }).defaultPrice).toEqual({ input: "0.2", output: "0.6" });
  expect(() => loadConfig({ SWITCHYARD_DEFAULT_PRICE: "0.2" })).toThrow('SWITCHYARD_DEFAULT_PRICE: must be two USD prices per million tokens, input then output, e.g. "0.2,0.6"');
  expect(() => loadConfig({ SWITCHYARD_DEFAULT_PRICE: "-1,2" })).toThrow("SWITCHYARD_DEFAULT_PRICE");
  expect(() => loadConfig({ SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "soon" })).toThrow("SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS");
});
