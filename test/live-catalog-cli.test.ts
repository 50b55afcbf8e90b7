/**
 * `switchyard catalog|upstreams|routes` against the store a running server reads (docs/operate.md,
 * "Managing models, prices and routes live"), on both stores: what the CLI writes, the server
 * serves without a restart (SQLite: within SWITCHYARD_LIVE_CONFIG_POLL_SECONDS; PostgreSQL: by
 * notification); bad input is one line naming the field and exit status 2; a key given on standard
 * input is used and never printed. On PostgreSQL, two instances see what was written through either.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { describeEachStore } from "./support/stores";
import { testDatabase } from "./support/postgres";
import { chat } from "./support/gateway-client";

const ROOT = resolve(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules/.bin/bun");

const listed = async (h: Harness) => ((await (await fetch(h.base + "/v1/models")).json()) as { data: { id: string }[] }).data.map((m) => m.id);

/** Polls `check` until it holds (at most ~15 s on a loaded machine); whether it did is what tests assert. */
async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 300; i++) {
    if (await check()) return true;
    await Bun.sleep(50);
  }
  return false;
}

describeEachStore("switchyard catalog|upstreams|routes beside a running server", (store) => {
  let fake: FakeUpstream;
  let h: Harness;
  let url: string | null = null;

  async function cli(args: string[], stdin?: string) {
    const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), ...args], {
      cwd: tmpdir(),
      env: {
        PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", SWITCHYARD_DATA_DIR: h.dataDir, SWITCHYARD_LOG_LEVEL: "silent",
        SWITCHYARD_UPSTREAM_URL: fake.url, ...(url ? { SWITCHYARD_DATABASE_URL: url } : {}),
      },
      stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, stdout, stderr };
  }

  beforeAll(async () => {
    fake = startFakeUpstream();
    url = store === "postgres" ? await testDatabase() : null;
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_LIVE_CONFIG_POLL_SECONDS: "1", ...(url ? { SWITCHYARD_DATABASE_URL: url } : {}) }, {}, store);
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    fake?.stop();
  });

  test("a model added, repriced and disabled by the CLI is served, repriced and withdrawn by the server", async () => {
    const add = await cli(["catalog", "add", "cli/model-1", "--kind", "chat", "--owned-by", "acme", "--context-window", "32768", "--input-price", "0.3", "--output-price", "0.9"]);
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({ id: "cli/model-1", source: "admin", pricing: { input_per_million: 0.3, output_per_million: 0.9 } });
    expect(await eventually(async () => (await listed(h)).includes("cli/model-1"))).toBe(true);

    await cli(["catalog", "update", "cli/model-1", "--output-price", "1.2"]);
    expect(await eventually(async () => (await h.admin("GET", "/admin/models/cli/model-1")).body.pricing?.output_per_million === 1.2)).toBe(true);

    const table = await cli(["catalog", "list"]);
    expect(table.stdout).toMatch(/^ID\s+KIND\s+OWNED BY/);
    expect(table.stdout).toMatch(/cli\/model-1\s+chat\s+acme\s+32768\s+0\.3\s+-\s+1\.2\s+yes\s+yes\s+admin/);

    await cli(["catalog", "disable", "cli/model-1"]);
    expect(await eventually(async () => !(await listed(h)).includes("cli/model-1"))).toBe(true);
    await cli(["catalog", "remove", "cli/model-1"]);
  });

  test("catalog add --cached-input-price --cache-write-price: the server charges cached prompt tokens at the cached price", async () => {
    const add = await cli(["catalog", "add", "cli/cached-1", "--kind", "chat", "--owned-by", "acme", "--context-window", "32768",
      "--input-price", "1.00", "--output-price", "2.00", "--cached-input-price", "0.10", "--cache-write-price", "1.25"]);
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    expect(JSON.parse(add.stdout)).toMatchObject({ id: "cli/cached-1", pricing: { input_per_million: 1, output_per_million: 2, cached_input_per_million: 0.1, cache_write_per_million: 1.25 } });
    expect(await eventually(async () => (await listed(h)).includes("cli/cached-1"))).toBe(true);
    const updated = await cli(["catalog", "update", "cli/cached-1", "--cached-input-price", "0.05"]);
    expect(JSON.parse(updated.stdout).pricing).toEqual({ input_per_million: 1, output_per_million: 2, cached_input_per_million: 0.05, cache_write_per_million: 1.25 });
    expect(await eventually(async () => (await h.admin("GET", "/admin/models/cli/cached-1")).body.pricing?.cached_input_per_million === 0.05)).toBe(true);
    // 11 prompt tokens of which 8 cached, 6 out: 3 × 1.00 + 8 × 0.05 + 6 × 2.00 µUSD.
    fake.behave({ promptTokens: 11, cachedTokens: 8 });
    try {
      const acct = await h.account(5);
      const res = await chat(h, acct.key, { model: "cli/cached-1" });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-request-cost")).toBe("0.0000154");
      expect(await h.probe.charge(res.headers.get("x-request-id")!)).toMatchObject({ input_tokens: 11, cached_tokens: 8, amount: -15_400 });
    } finally {
      fake.behave({});
    }
    const bad = await cli(["catalog", "update", "cli/cached-1", "--cache-write-price", "lots"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("pricing.cache_write_per_million");
    expect((await cli(["catalog", "remove", "cli/cached-1"])).code).toBe(0);
  });

  test("bad CLI input is one line naming the field, exit status 2, nothing written", async () => {
    const bad = await cli(["catalog", "add", "cli/bad", "--kind", "chat", "--owned-by", "acme", "--context-window", "lots", "--input-price", "1"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--context-window must be a whole number");
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    const price = await cli(["catalog", "add", "cli/bad", "--kind", "chat", "--owned-by", "acme", "--context-window", "10", "--input-price", "free"]);
    expect(price.code).toBe(2);
    expect(price.stderr).toContain("pricing.input_per_million");
    expect((await h.admin("GET", "/admin/models/cli/bad")).status).toBe(404);
    expect((await cli(["routes", "add", "glm-4.6", "nowhere"])).stderr).toContain("routes[0].upstream");
  });

  test("an upstream whose key comes on standard input, a route to it, and its test", async () => {
    const added = await cli(["upstreams", "add", "cli-up", "--base-url", fake.url, "--key-stdin"], "sk-cli-secret-000111\n");
    expect(added.code).toBe(0);
    expect(added.stdout).not.toContain("sk-cli-secret");
    expect(JSON.parse(added.stdout)).toMatchObject({ name: "cli-up", has_key: true });
    const route = await cli(["routes", "add", "minimax-m2", "cli-up", "--upstream-model", "MiniMax/M2", "--weight", "2"]);
    expect(route.code).toBe(0);
    expect(JSON.parse(route.stdout)).toMatchObject({ model: "minimax-m2", routes: [{ upstream: "cli-up", model: "MiniMax/M2", weight: 2 }] });
    const tested = await cli(["routes", "test", "minimax-m2"]);
    expect(JSON.parse(tested.stdout).results[0]).toMatchObject({ upstream: "cli-up", upstream_model: "MiniMax/M2", ok: true, status: 200 });
    expect(tested.stdout).not.toContain("sk-cli-secret");
    // The server routes there once it has read the change.
    const acct = await h.account(5);
    expect(await eventually(async () => {
      const before = fake.requests.length;
      const res = await chat(h, acct.key, { model: "minimax-m2" });
      await res.text();
      return res.status === 200 && fake.requests.length > before && fake.requests.at(-1)!.model === "MiniMax/M2";
    })).toBe(true);
    const list = await cli(["routes", "list"]);
    expect(list.stdout).toMatch(/minimax-m2\s+0\s+cli-up\s+MiniMax\/M2\s+2\s+no\s+no\s+\S+\s+admin/);
    expect((await cli(["routes", "remove", "minimax-m2"])).code).toBe(0);
    expect((await cli(["upstreams", "remove", "cli-up"])).code).toBe(0);
  });

  if (store === "postgres") {
    test("two instances on one PostgreSQL: a model and a price written through one are served by the other", async () => {
      const b = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_DATABASE_URL: url!, SWITCHYARD_LIVE_CONFIG_POLL_SECONDS: "0" }, {}, "postgres");
      try {
        // Polling is off on B: only the change notification can tell it.
        expect((await h.admin("POST", "/admin/models", { id: "shared-model", owned_by: "acme", kind: "chat", context_window: 4096, pricing: { input_per_million: "1", output_per_million: "1" } })).status).toBe(201);
        expect(await eventually(async () => (await listed(b)).includes("shared-model"))).toBe(true);
        const t0 = performance.now();
        await h.admin("PATCH", "/admin/models/shared-model", { pricing: { output_per_million: "3" } });
        expect(await eventually(async () => (await b.admin("GET", "/admin/models/shared-model")).body.pricing.output_per_million === 3)).toBe(true);
        // Printed, never asserted on: a loaded machine must not fail the suite.
        console.log(`price changed through A, seen by B after ${Math.round(performance.now() - t0)} ms`);
        const acct = await b.account(5);
        const res = await chat(b, acct.key, { model: "shared-model" });
        expect(res.status).toBe(200);
        const charge = (await b.probe.charge(res.headers.get("x-request-id")!))!;
        // 1 USD per million input tokens, 3 per million output, in units of 1e-9 USD, rounded up.
        expect(-charge.amount).toBe(Math.ceil((charge.input_tokens * 1e9 + charge.output_tokens * 3e9) / 1e6));
        // And back: disabled through B, withdrawn on A.
        await b.admin("PATCH", "/admin/models/shared-model", { enabled: false });
        expect(await eventually(async () => !(await listed(h)).includes("shared-model"))).toBe(true);
      } finally {
        await b.stop();
      }
    }, 60_000);
  }
});
