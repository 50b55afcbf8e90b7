/**
 * SWITCHYARD_ROUTES as a file: edits take effect without a restart, a model whose first route
 * appears is listed at once, a broken edit keeps the last good routes, and a bad file at start
 * stops start-up with one line naming the variable.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "./support/harness";
import { okJson, startScripted, writeRoutes, type ScriptedUpstream } from "./support/multi-upstream";
import { postChat } from "./support/chat-client";
import { ConfigError, loadConfig } from "../src/config";
import { startServer } from "../src/server";

const FIRST = "glm-4.6";
const NEW = "seed-oss-36b";

let dir: string;
let one: ScriptedUpstream;
let two: ScriptedUpstream;
let h: Harness;
let acct: { id: string; key: string };
let path: string;

const listed = async () => ((await (await fetch(h.base + "/v1/models")).json()).data as { id: string }[]).map((m) => m.id);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "switchyard-routes-"));
  one = startScripted((b) => okJson(b, "one"));
  two = startScripted((b) => okJson(b, "two"));
  path = writeRoutes(join(dir, "routes.json"), {
    upstreams: { one: { base_url: one.url } },
    models: { [FIRST]: [{ upstream: "one", model: "m-one" }] },
  });
  h = await startHarness({ SWITCHYARD_ROUTES: path });
  acct = await h.account(10);
});
afterAll(async () => {
  await h.stop();
  one.stop();
  two.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("hot reload", () => {
  test("only routed models are listed (no default upstream)", async () => {
    const ids = await listed();
    expect(ids).toContain(FIRST);
    expect(ids).toContain(`${FIRST}-turbo`);
    expect(ids).not.toContain(NEW);
    const res = await postChat(h.base, acct.key, { model: NEW, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(503);
  });

  test("adding a model's first route lists it at once and serves it; moving a route takes effect", async () => {
    writeRoutes(path, {
      upstreams: { one: { base_url: one.url }, two: { base_url: two.url } },
      models: { [FIRST]: [{ upstream: "two", model: "m-two" }], [NEW]: [{ upstream: "two", model: "seed" }] },
    });
    let ids: string[] = [];
    const until = Date.now() + 3_000;
    while (!(ids = await listed()).includes(NEW) && Date.now() < until) await Bun.sleep(25);
    expect(ids).toContain(NEW);
    const res = await postChat(h.base, acct.key, { model: NEW, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    expect(two.requests.at(-1)!.model).toBe("seed");
    const moved = await postChat(h.base, acct.key, { model: FIRST, messages: [{ role: "user", content: "hi" }] });
    expect((await moved.json()).choices[0].message.content).toBe("two");
  });

  test("a broken edit keeps the last good routes serving", async () => {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(path, "{ this is not json");
    await Bun.sleep(300);
    const res = await postChat(h.base, acct.key, { model: NEW, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(200);
    expect(await listed()).toContain(NEW);
  });

  test("removing a model's last route takes it off the list", async () => {
    writeRoutes(path, { upstreams: { two: { base_url: two.url } }, models: { [FIRST]: [{ upstream: "two" }] } });
    const until = Date.now() + 3_000;
    let ids: string[] = [];
    while ((ids = await listed()).includes(NEW) && Date.now() < until) await Bun.sleep(25);
    expect(ids).not.toContain(NEW);
    expect(ids).toContain(FIRST);
  });
});

describe("with a default upstream as well", () => {
  test("models the routes do not name go to SWITCHYARD_UPSTREAM_URL; an empty route list takes a model offline", async () => {
    const dflt = startScripted((b) => okJson(b, "default"));
    const routed = startScripted((b) => okJson(b, "routed"));
    const h2 = await startHarness({
      SWITCHYARD_UPSTREAM_URL: dflt.url,
      SWITCHYARD_ROUTES: JSON.stringify({
        upstreams: { r: { base_url: routed.url } },
        models: { [FIRST]: [{ upstream: "r", model: "routed-glm" }], [NEW]: [] },
      }),
    });
    try {
      const k = await h2.account(10);
      const ask = async (model: string) => postChat(h2.base, k.key, { model, messages: [{ role: "user", content: "hi" }] });
      expect((await (await ask(FIRST)).json()).choices[0].message.content).toBe("routed");
      expect((await (await ask("minimax-m2")).json()).choices[0].message.content).toBe("default");
      expect(dflt.requests.at(-1)!.model).toBe("minimax-m2");
      expect((await ask(NEW)).status).toBe(503);
      const ids = ((await (await fetch(h2.base + "/v1/models")).json()).data as { id: string }[]).map((m) => m.id);
      expect(ids).toContain("minimax-m2");
      expect(ids).not.toContain(NEW);
    } finally {
      await h2.stop();
      dflt.stop();
      routed.stop();
    }
  });
});

describe("a bad SWITCHYARD_ROUTES stops start-up naming the variable", () => {
  const cases: [string, string][] = [
    ["invalid JSON", "{ nope"],
    ["a route to an unknown upstream", JSON.stringify({ upstreams: {}, models: { [FIRST]: [{ upstream: "ghost" }] } })],
    ["a bad base URL", JSON.stringify({ upstreams: { a: { base_url: "not a url" } }, models: {} })],
    ["a missing file", "/nonexistent/switchyard/routes.json"],
    ["a wrong type", JSON.stringify({ upstreams: { a: { base_url: "http://127.0.0.1:1/v1", timeouts: { idle_ms: "soon" } } }, models: {} })],
  ];
  test.each(cases)("%s", async (_name, value) => {
    const dataDir = mkdtempSync(join(tmpdir(), "switchyard-badroutes-"));
    try {
      const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_LOG_LEVEL: "silent", SWITCHYARD_ROUTES: value });
      let err: unknown = null;
      try {
        const s = await startServer(config);
        await s.stop();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe("SWITCHYARD_ROUTES");
      expect((err as Error).message).toStartWith("SWITCHYARD_ROUTES: ");
      expect((err as Error).message).not.toContain("\n");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
