/**
 * Models, prices, upstreams and routes managed live (docs/operate.md, "Managing models, prices and routes
 * live"), on both stores: added, changed, disabled and removed through the admin API without a
 * restart; bad input answered 400 naming the field; an upstream's key never shown; "test this
 * route" unbilled; and a price changed while a stream runs charges that stream the old price and
 * the next request the new one.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { describeEachStore } from "./support/stores";
import { chat } from "./support/gateway-client";
import { usdToUnits } from "./support/expected-cost";
import { serveLoopback } from "./support/loopback-server";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Units for `input`/`output` tokens at these USD-per-million prices, rounded up as the ledger does. */
function cost(pIn: string, pOut: string, input: number, output: number): number {
  const raw = BigInt(input) * usdToUnits(pIn) + BigInt(output) * usdToUnits(pOut);
  return Number((raw + 999_999n) / 1_000_000n);
}

const SECRET = "sk-live-upstream-secret-0123456789";

/** An upstream that answers only requests carrying SECRET, so a test sees which key a route sent. */
function keyedUpstream() {
  const seen: { authorization: string | null; model: string }[] = [];
  const { server, url } = serveLoopback({
    async fetch(req) {
      const body = (await req.json()) as { model: string };
      seen.push({ authorization: req.headers.get("authorization"), model: body.model });
      if (req.headers.get("authorization") !== `Bearer ${SECRET}`) return Response.json({ error: { message: "bad key" } }, { status: 401 });
      return Response.json({
        id: "x", object: "chat.completion", created: 1, model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: "Yes I am here and listening" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 },
      });
    },
  });
  return { url, seen, stop: () => server.stop(true) };
}

const listed = async (h: Harness) => ((await (await fetch(h.base + "/v1/models")).json()) as { data: { id: string }[] }).data.map((m) => m.id);

describeEachStore("live catalog", (store) => {
  let fake: FakeUpstream;
  let keyed: ReturnType<typeof keyedUpstream>;
  let h: Harness;
  let acct: { id: string; key: string };

  beforeAll(async () => {
    fake = startFakeUpstream();
    keyed = keyedUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url }, {}, store);
    acct = await h.account(50);
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    fake?.stop();
    keyed?.stop();
  });

  test("a model with slashes in its id is added, listed, served, changed and removed without a restart", async () => {
    expect(await listed(h)).not.toContain("Acme/Thing-8B");
    const add = await h.admin("POST", "/admin/models", {
      id: "Acme/Thing-8B", owned_by: "acme", kind: "chat", context_window: 65536, max_output_tokens: 4096,
      pricing: { input_per_million: 0.25, output_per_million: "1.5" }, input_modalities: ["text"], turbo: true,
    });
    expect(add.status).toBe(201);
    expect(add.body).toMatchObject({ id: "Acme/Thing-8B", source: "admin", enabled: true, live: true, pricing: { input_per_million: 0.25, output_per_million: 1.5 } });
    expect(await listed(h)).toEqual(expect.arrayContaining(["Acme/Thing-8B", "Acme/Thing-8B-turbo"]));
    expect((await h.admin("GET", "/admin/models/Acme/Thing-8B")).body.owned_by).toBe("acme");
    expect((await h.admin("GET", "/admin/models/Acme%2FThing-8B")).body.owned_by).toBe("acme");

    const res = await chat(h, acct.key, { model: "Acme/Thing-8B" });
    expect(res.status).toBe(200);
    const charge = await h.probe.charge(res.headers.get("x-request-id")!);
    expect(charge!.model).toBe("Acme/Thing-8B");
    expect(-charge!.amount).toBe(cost("0.25", "1.5", charge!.input_tokens, charge!.output_tokens));
    expect(charge!.reason).toBe("price per 1M USD: input 0.25, output 1.5");
    const turbo = await chat(h, acct.key, { model: "Acme/Thing-8B-turbo" });
    expect((await h.probe.charge(turbo.headers.get("x-request-id")!))!.reason).toBe("price per 1M USD: input 0.25, output 1.5, x1.5");

    const patched = await h.admin("PATCH", "/admin/models/Acme/Thing-8B", { context_window: 131072, pricing: { output_per_million: 2 } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ context_window: 131072, pricing: { input_per_million: 0.25, output_per_million: 2 } });
    // A body copied from GET (view fields, nulls) goes back as it is.
    const again = await h.admin("GET", "/admin/models/Acme/Thing-8B");
    expect((await h.admin("PATCH", "/admin/models/Acme/Thing-8B", { ...again.body, dimensions: null, turbo: false })).body).toMatchObject({ turbo: false, context_window: 131072 });
    // Already written: a second POST is refused, naming the field.
    expect((await h.admin("POST", "/admin/models", { ...add.body, id: "Acme/Thing-8B" })).status).toBe(400);

    const del = await h.admin("DELETE", "/admin/models/Acme/Thing-8B");
    expect(del.body).toMatchObject({ id: "Acme/Thing-8B", deleted: true, source: null });
    expect(await listed(h)).not.toContain("Acme/Thing-8B");
    expect((await chat(h, acct.key, { model: "Acme/Thing-8B" })).status).toBe(404);
    expect((await h.admin("GET", "/admin/models/Acme/Thing-8B")).status).toBe(404);
  });

  test("an embedded model is disabled and enabled again; deleting the override restores it", async () => {
    const before = await h.admin("GET", "/admin/models/glm-4.6");
    expect(before.body).toMatchObject({ source: "embedded", enabled: true, live: true });
    const off = await h.admin("PATCH", "/admin/models/glm-4.6", { enabled: false });
    expect(off.body).toMatchObject({ source: "admin", enabled: false, live: false });
    expect(await listed(h)).not.toContain("glm-4.6");
    expect((await chat(h, acct.key, {})).status).toBe(404);
    expect((await h.admin("GET", "/admin/models")).body.data.find((m: { id: string }) => m.id === "glm-4.6")).toMatchObject({ enabled: false });
    await h.admin("DELETE", "/admin/models/glm-4.6");
    expect((await h.admin("GET", "/admin/models/glm-4.6")).body).toMatchObject({ source: "embedded", enabled: true });
    expect((await chat(h, acct.key, {})).status).toBe(200);
  });

  test("bad model input is a 400 naming the field and the rule, and writes nothing", async () => {
    const base = { id: "bad-one", owned_by: "acme", kind: "chat", context_window: 1000, pricing: { input_per_million: "0.1", output_per_million: "0.2" } };
    const cases: [unknown, string][] = [
      [{ ...base, owned_by: undefined }, "owned_by"],
      [{ ...base, pricing: { input_per_million: "cheap" } }, "pricing.input_per_million"],
      [{ ...base, pricing: { input_per_million: -1 } }, "pricing.input_per_million"],
      [{ ...base, context_window: undefined }, "context_window"],
      [{ ...base, id: "bad-one-turbo" }, "id"],
      [{ ...base, id: "has space" }, "id"],
      [{ ...base, kind: "video" }, "kind"],
      [{ ...base, max_output_tokens: 99999 }, "max_output_tokens"],
      [{ ...base, colour: "red" }, "colour"],
      ["not an object", "body"],
    ];
    for (const [body, field] of cases) {
      const r = await h.admin("POST", "/admin/models", body);
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe(field);
      expect(r.body.error.message.length).toBeGreaterThan(10);
    }
    expect((await h.admin("PATCH", "/admin/models/glm-4.6", { pricing: { output_per_million: "1.1234567891" } })).body.error.param).toBe("pricing.output_per_million");
    expect((await h.admin("PATCH", "/admin/models/nope", { turbo: true })).status).toBe(404);
    expect((await h.admin("GET", "/admin/models")).body.data.some((m: { id: string }) => m.id === "bad-one")).toBe(false);
  });

  test("operator values past their documented range are a 400 naming the field, and never reach /v1/models", async () => {
    const base = { id: "unbounded", owned_by: "acme", kind: "chat", context_window: 1000, pricing: { input_per_million: "0.1", output_per_million: "0.2" } };
    const cases: [unknown, string][] = [
      [{ ...base, owned_by: "x".repeat(100_000) }, "owned_by"],
      [{ ...base, owned_by: "a\u0000b\r\n<b>html</b>" }, "owned_by"],
      [{ ...base, created: 1e300 }, "created"],
      [{ ...base, context_window: 1e20 }, "context_window"],
      [{ ...base, pricing: { input_per_million: 1e6, output_per_million: "1" } }, "pricing.input_per_million"],
    ];
    for (const [body, field] of cases) {
      const r = await h.admin("POST", "/admin/models", body);
      expect(r.status).toBe(400);
      expect(r.body.error.param).toBe(field);
    }
    expect((await h.admin("PATCH", "/admin/models/glm-4.6", { owned_by: "Z.ai\r\nX: y" })).body.error.param).toBe("owned_by");
    const models = await (await fetch(h.base + "/v1/models")).text();
    expect(models).not.toContain("unbounded");
    expect(models).not.toContain("e+");
  });

  test("an upstream with a key and a route to it: served, tested, key never shown", async () => {
    const up = await h.admin("POST", "/admin/upstreams", { name: "keyed", base_url: keyed.url, key: SECRET, timeouts: { connect_ms: 2000 } });
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ name: "keyed", source: "admin", has_key: true, base_url: keyed.url });
    const all = await h.admin("GET", "/admin/upstreams");
    expect(JSON.stringify(all.body)).not.toContain(SECRET);
    expect(all.body.data.map((u: { name: string }) => u.name)).toEqual(expect.arrayContaining(["default", "keyed"]));

    const set = await h.admin("POST", "/admin/routes", { model: "qwen3-235b-a22b-instruct", routes: [{ upstream: "keyed", model: "Qwen/Qwen3-235B" }] });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ model: "qwen3-235b-a22b-instruct", source: "admin", routes: [{ index: 0, upstream: "keyed", model: "Qwen/Qwen3-235B", weight: 1 }] });
    const res = await chat(h, acct.key, { model: "qwen3-235b-a22b-instruct" });
    expect(res.status).toBe(200);
    expect(keyed.seen.at(-1)).toEqual({ authorization: `Bearer ${SECRET}`, model: "Qwen/Qwen3-235B" });

    const chargesBefore = (await h.probe.counts(acct.id)).charges;
    const tested = await h.admin("POST", "/admin/routes/test", { model: "qwen3-235b-a22b-instruct" });
    expect(tested.status).toBe(200);
    expect(tested.body.results).toEqual([expect.objectContaining({ index: 0, upstream: "keyed", upstream_model: "Qwen/Qwen3-235B", ok: true, status: 200, first_words: "Yes I am here and listening", error: null })]);
    expect(typeof tested.body.results[0].latency_ms).toBe("number");
    expect(JSON.stringify(tested.body)).not.toContain(SECRET);
    expect((await h.probe.counts(acct.id)).charges).toBe(chargesBefore); // unbilled

    // A wrong key: the test reports the upstream's refusal, still without any key.
    await h.admin("PATCH", "/admin/upstreams/keyed", { key: "sk-wrong-key-000000" });
    const refused = await h.admin("POST", "/admin/routes/test", { model: "qwen3-235b-a22b-instruct", route: 0 });
    expect(refused.body.results[0]).toMatchObject({ ok: false, status: 401, error: "status 401", first_words: null });
    expect(JSON.stringify(refused.body)).not.toContain("sk-wrong");
    await h.admin("PATCH", "/admin/upstreams/keyed", { key: SECRET });

    // Still used by a route: the upstream cannot be removed; the routes go first.
    expect((await h.admin("DELETE", "/admin/upstreams/keyed")).status).toBe(400);
    expect((await h.admin("DELETE", "/admin/routes/qwen3-235b-a22b-instruct")).body).toMatchObject({ deleted: true });
    expect((await h.admin("GET", "/admin/routes/qwen3-235b-a22b-instruct")).body).toMatchObject({ source: "default" });
    expect((await h.admin("DELETE", "/admin/upstreams/keyed")).body).toMatchObject({ deleted: true });
  });

  test("bad upstream and route input is a 400 naming the field", async () => {
    const bad: [string, unknown, string][] = [
      ["/admin/upstreams", { name: "x y", base_url: "http://a/v1" }, "name"],
      ["/admin/upstreams", { name: "default", base_url: "http://a/v1" }, "name"],
      ["/admin/upstreams", { name: "u1", base_url: "ftp://a/v1" }, "base_url"],
      ["/admin/upstreams", { name: "u1", base_url: "http://a/v1", timeouts: { connect_ms: 0 } }, "timeouts.connect_ms"],
      ["/admin/upstreams", { name: "u1", base_url: "https://a/v1", tls: { ca_file: "/nonexistent/ca.pem" } }, "tls.ca_file"],
      ["/admin/routes", { model: "glm-4.6", routes: [{ upstream: "nowhere" }] }, "routes[0].upstream"],
      ["/admin/routes", { model: "glm-4.6", routes: [{ upstream: "default", weight: -1 }] }, "routes[0].weight"],
      ["/admin/routes", { model: "glm-4.6", routes: "all" }, "routes"],
      ["/admin/routes/test", { model: "glm-4.6", route: 7 }, "route"],
    ];
    for (const [path, body, field] of bad) {
      const r = await h.admin("POST", path, body);
      expect({ path, status: r.status, param: r.body.error?.param }).toEqual({ path, status: 400, param: field });
    }
    expect((await h.admin("GET", "/admin/upstreams")).body.data.some((u: { name: string }) => u.name === "u1")).toBe(false);
  });

  test("a TLS file that is a FIFO, a directory or a device is refused at once, naming the field; the server keeps answering", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-fifo-"));
    const fifo = join(dir, "ca.pem");
    Bun.spawnSync(["mkfifo", fifo]);
    // The old code read it with readFileSync, blocking the event loop until something wrote to it:
    // this writer frees it after a while, so that code answers late, and with another message.
    const writer = Bun.spawn(["sh", "-c", `sleep 20; echo not-a-pem > ${fifo}`], { stdout: "ignore", stderr: "ignore" });
    try {
      const health = fetch(h.base + "/healthz");
      for (const [file, why] of [[fifo, "a FIFO, not a regular file"], [dir, "a directory, not a regular file"], ["/dev/zero", "a device, not a regular file"]] as const) {
        const r = await h.admin("POST", "/admin/upstreams", { name: "tls-special", base_url: "https://engine.internal/v1", tls: { ca_file: file } });
        expect(r.status).toBe(400);
        expect(r.body.error.param).toBe("tls.ca_file");
        expect(r.body.error.message).toContain(why);
      }
      expect((await health).status).toBe(200);
    } finally {
      writer.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("key_env names only variables starting with SWITCHYARD_UPSTREAM_KEY_: an admin cannot send the server's environment anywhere", async () => {
    process.env.AWS_SECRET_ACCESS_KEY = "aws-secret-never-sent-0123456789";
    process.env.SWITCHYARD_UPSTREAM_KEY_KEYED = SECRET;
    try {
      for (const key_env of ["AWS_SECRET_ACCESS_KEY", "SWITCHYARD_ADMIN_TOKEN", "PATH", "SWITCHYARD_UPSTREAM_KEY_"]) {
        const r = await h.admin("POST", "/admin/upstreams", { name: "exfil", base_url: keyed.url, key_env });
        expect(r.status).toBe(400);
        expect(r.body.error.param).toBe("key_env");
        expect(r.body.error.message).toContain("SWITCHYARD_UPSTREAM_KEY_");
        expect(JSON.stringify(r.body)).not.toContain("aws-secret");
      }
      const ok = await h.admin("POST", "/admin/upstreams", { name: "keyed-env", base_url: keyed.url, key_env: "SWITCHYARD_UPSTREAM_KEY_KEYED" });
      expect(ok.status).toBe(201);
      expect(ok.body).toMatchObject({ has_key: true });
      expect(JSON.stringify(ok.body)).not.toContain(SECRET);
      // A row stored before this rule (or by hand) is skipped when loaded, not used.
      await h.server.services.liveConfig.records.put("upstream", "stored-exfil", JSON.stringify({ base_url: keyed.url, api_key_env: "AWS_SECRET_ACCESS_KEY" }), 1);
      await h.server.services.liveConfig.reload();
      expect((await h.admin("GET", "/admin/upstreams")).body.data.some((u: { name: string }) => u.name === "stored-exfil")).toBe(false);
      await h.server.services.liveConfig.records.remove("upstream", "stored-exfil");
      expect((await h.admin("DELETE", "/admin/upstreams/keyed-env")).status).toBe(200);
    } finally {
      delete process.env.AWS_SECRET_ACCESS_KEY;
      delete process.env.SWITCHYARD_UPSTREAM_KEY_KEYED;
    }
  });

  test("a stored row that no longer checks is skipped; the rest keep serving", async () => {
    const records = h.server.services.liveConfig.records;
    await records.put("upstream", "broken", JSON.stringify({ base_url: "ftp://nowhere/v1" }), 1);
    await records.put("model", "broken-model", "{not json", 1);
    await records.put("model", "still-fine", JSON.stringify({ id: "still-fine", owned_by: "acme", kind: "chat", context_window: 4096, pricing: { input_per_million: "1", output_per_million: "1" } }), 1);
    await h.server.services.liveConfig.reload();
    expect(await listed(h)).toContain("still-fine");
    expect((await h.admin("GET", "/admin/upstreams")).body.data.some((u: { name: string }) => u.name === "broken")).toBe(false);
    expect((await h.admin("GET", "/admin/models/broken-model")).status).toBe(404);
    await records.remove("upstream", "broken");
    await records.remove("model", "broken-model");
    await h.admin("DELETE", "/admin/models/still-fine");
    expect(await listed(h)).not.toContain("still-fine");
  });

  test("a route list of [] takes a model offline; removing it brings the default route back", async () => {
    await h.admin("PUT", "/admin/routes/glm-4.6", { routes: [] });
    expect(await listed(h)).not.toContain("glm-4.6");
    await h.admin("DELETE", "/admin/routes/glm-4.6");
    expect(await listed(h)).toContain("glm-4.6");
  });

  test("a price changed while a stream runs: that stream pays the old price, the next request the new one", async () => {
    await h.admin("POST", "/admin/models", { id: "priced-live", owned_by: "acme", kind: "chat", context_window: 8192, pricing: { input_per_million: "1", output_per_million: "2" } });
    let patched: Promise<unknown> | null = null;
    fake.behave({
      words: ["a", " b", " c", " d"],
      // The price changes after the stream's hold, while its chunks are being relayed.
      beforeFinish: async () => {
        patched = h.admin("PATCH", "/admin/models/priced-live", { pricing: { input_per_million: "10", output_per_million: "20" } });
        await patched;
      },
    });
    const res = await chat(h, acct.key, { model: "priced-live", stream: true });
    expect(res.status).toBe(200);
    await res.text();
    expect(patched).not.toBeNull();
    fake.behave({});
    const first = (await h.probe.charge(res.headers.get("x-request-id")!))!;
    expect(-first.amount).toBe(cost("1", "2", first.input_tokens, first.output_tokens));
    // The ledger entry records the prices it was charged at.
    expect(first.reason).toBe("price per 1M USD: input 1, output 2");
    expect((await h.admin("GET", "/admin/models/priced-live")).body.pricing).toEqual({ input_per_million: 10, output_per_million: 20 });

    const next = await chat(h, acct.key, { model: "priced-live" });
    expect(next.status).toBe(200);
    const second = (await h.probe.charge(next.headers.get("x-request-id")!))!;
    expect(-second.amount).toBe(cost("10", "20", second.input_tokens, second.output_tokens));
    expect(second.input_tokens).toBeGreaterThan(0);
    expect(second.reason).toBe("price per 1M USD: input 10, output 20");
    await h.admin("DELETE", "/admin/models/priced-live");
  });
});
