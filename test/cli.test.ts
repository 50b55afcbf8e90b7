/**
 * The command line as a real subprocess against a temporary data directory: the same operations
 * as the admin API, JSON out, and bad input or bad configuration as one line and a non-zero exit.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Database } from "bun:sqlite";
import { startHarness } from "./support/harness";
import { startFakeUpstream } from "./support/fake-upstream";

const ROOT = resolve(import.meta.dir, "..");
const BUN = join(ROOT, "node_modules/.bin/bun");
const dataDir = mkdtempSync(join(tmpdir(), "switchyard-cli-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Every ledger entry and account row, read straight from the file: what a failed command must not change. */
function snapshot(): string {
  const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
  try {
    return JSON.stringify([db.query("SELECT * FROM ledger_entries ORDER BY id").all(), db.query("SELECT * FROM accounts ORDER BY id").all()]);
  } finally {
    db.close();
  }
}

function childEnv(env: Record<string, string>) {
  return { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_LOG_LEVEL: "silent", ...env };
}

async function cliAsync(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), ...args], { cwd: tmpdir(), env: childEnv(env), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

function cli(args: string[], env: Record<string, string> = {}) {
  const p = Bun.spawnSync([BUN, join(ROOT, "src/main.ts"), ...args], {
    cwd: tmpdir(), // runs from any directory
    env: childEnv(env),
    stdout: "pipe",
    stderr: "pipe",
  });
  const stdout = p.stdout.toString();
  let json: any = null;
  try {
    json = JSON.parse(stdout);
  } catch {}
  return { code: p.exitCode, stdout, stderr: p.stderr.toString(), json };
}

describe("administration commands", () => {
  let accountId = "";
  let keyId = "";
  let key = "";

  test("accounts create with credits prints the account with exact USD", () => {
    const r = cli(["accounts", "create", "acme", "--credits", "12.5"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ name: "acme", balance: 12.5, reserved: 0, disabled: false });
    accountId = r.json.id;
    expect(accountId).toMatch(/^acct_/);
  });

  test("keys create prints the key once; keys list shows the prefix only", () => {
    const r = cli(["keys", "create", accountId, "--name", "ci"]);
    expect(r.code).toBe(0);
    expect(r.json.key.startsWith(r.json.prefix)).toBe(true);
    keyId = r.json.id;
    key = r.json.key;
    const list = cli(["keys", "list", accountId, "--json"]);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(key);
    expect(list.json.data[0]).toMatchObject({ id: keyId, prefix: r.json.prefix, revoked: false });
  });

  test("credits add and deduct, then accounts show and the ledger agree", () => {
    expect(cli(["credits", "add", accountId, "2.5", "--reason", "bonus"]).json.balance).toBe(15);
    expect(cli(["credits", "deduct", accountId, "0.000123", "--reason", "fix"]).json.balance).toBe(14.999877);
    const show = cli(["accounts", "show", accountId]);
    expect(show.code).toBe(0);
    expect(show.json.balance).toBe(14.999877);
    const ledger = cli(["ledger", accountId, "--json"]);
    expect(ledger.json.data.map((e: any) => [e.amount, e.reason])).toEqual([
      [-0.000123, "fix"],
      [2.5, "bonus"],
      [12.5, "initial credits"],
    ]);
  });

  test("the server sees what the CLI wrote: the key works, then a revoke stops it", async () => {
    const h = await startHarness({ SWITCHYARD_DATA_DIR: dataDir });
    try {
      const ask = () =>
        fetch(h.base + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" });
      expect((await ask()).status).toBe(400); // authenticated, then the empty body was judged
      const revoked = cli(["keys", "revoke", keyId]);
      expect(revoked.code).toBe(0);
      expect(revoked.json).toMatchObject({ id: keyId, revoked: true });
      expect((await ask()).status).toBe(401);
    } finally {
      await h.server.stop(); // keep dataDir: afterAll removes it
    }
  });

  test("keys create and update take the key controls (the admin API's fields and rules)", () => {
    const c = cli(["keys", "create", accountId, "--name", "capped", "--limit", "2.5", "--limit-reset", "daily", "--models", "glm-4.6,minimax-m2", "--rate-limit-rpm", "30"]);
    expect(c.stderr).toBe("");
    expect(c.json).toMatchObject({ name: "capped", limit: 2.5, limit_reset: "daily", models: ["glm-4.6", "minimax-m2"], rate_limit_rpm: 30, expires_at: null });
    const u = cli(["keys", "update", c.json.id, "--limit", "none", "--expires-at", "2030-01-01T00:00:00Z", "--models", "all", "--rate-limit-rpm", "none"]);
    expect(u.code).toBe(0);
    expect(u.json).toMatchObject({ id: c.json.id, limit: null, limit_reset: "daily", models: null, rate_limit_rpm: null, expires_at: "2030-01-01T00:00:00.000Z" });
    const bad = cli(["keys", "update", c.json.id, "--limit-reset", "hourly"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("limit_reset");
  });

  test("accounts update and list", () => {
    const u = cli(["accounts", "update", accountId, "--disabled", "true", "--rate-limit-rpm", "60"]);
    expect(u.code).toBe(0);
    expect(u.json).toMatchObject({ disabled: true, rate_limit_rpm: 60 });
    const list = cli(["accounts", "list", "--json"]);
    expect(list.json.data.map((a: { id: string }) => a.id)).toContain(accountId);
  });

  test("--help lists the commands", () => {
    const r = cli(["--help"]);
    expect(r.code).toBe(0);
    for (const c of ["accounts create", "keys create", "keys revoke", "credits add", "credits deduct", "accounts show"]) expect(r.stdout).toContain(c);
  });

  test("--help after a command prints its usage, with every option it takes; nothing is run", () => {
    for (const args of [["accounts", "create", "--help"], ["accounts", "create", "-h"], ["accounts", "create", "bob", "--credits", "5", "--help"]]) {
      const r = cli(args);
      expect(r.code).toBe(0);
      expect(r.stdout.split("\n")[0]).toBe("usage: switchyard accounts create <name> [--credits USD] [--json]");
    }
    expect(cli(["accounts", "list", "--json"]).json.data.map((a: { name: string }) => a.name)).not.toContain("bob");
    expect(cli(["catalog", "update", "--help"]).stdout).toContain("[--input-price USD] [--output-price USD]");
  });
});

describe("bad input", () => {
  const cases: [string[], string][] = [
    [["credits", "add", "ACCOUNT", "0"], "amount"],
    [["credits", "add", "ACCOUNT", "abc"], "amount"],
    [["credits", "add", "ACCOUNT", "0.0000000001"], "amount"],
    [["credits", "add", "ACCOUNT", "-5"], "USD"],
    [["credits", "deduct", "ACCOUNT", "100000"], "amount"],
    [["accounts", "update", "ACCOUNT", "--concurrency-limit", "0"], "concurrency_limit"],
    [["accounts", "update", "ACCOUNT", "--rate-limit-rpm", "-3"], "rate_limit_rpm"],
    [["accounts", "create", "x", "--credits", "-1"], "credits"],
    [["accounts", "show", "acct_nope"], "acct_nope"],
    [["keys", "create"], "<account-id>"],
    [["frobnicate"], "unknown command"],
    // Options are parsed strictly: an unknown one, a missing or malformed value, one given twice.
    [["accounts", "create", "alice", "--credts", "25"], "unknown option '--credts'"],
    [["accounts", "create", "alice", "--credits"], "--credits needs a value"],
    [["accounts", "create", "alice", "--credits", "--json"], "--credits needs a value"],
    [["accounts", "update", "ACCOUNT", "--disabled", "maybe"], "--disabled must be true or false"],
    [["accounts", "update", "ACCOUNT", "--concurrency-limit", "lots"], "--concurrency-limit must be a whole number or 'default'"],
    [["credits", "add", "ACCOUNT", "1", "--reason", "a", "--reason", "b"], "--reason is given twice"],
    [["keys", "list", "ACCOUNT", "--json=yes"], "--json takes no value"],
    [["ledger", "ACCOUNT", "--limit", "5"], "unknown option '--limit'"],
    [["-x"], "unknown option '-x'"],
  ];
  let before = "";
  let after = "";
  let results: Awaited<ReturnType<typeof cliAsync>>[] = [];
  beforeAll(async () => {
    const id = cli(["accounts", "create", "bad-input", "--credits", "5"]).json.id as string;
    before = snapshot();
    // Subprocesses are slow to start; run the independent failures side by side.
    results = await Promise.all(cases.map(([args]) => cliAsync(args.map((a) => (a === "ACCOUNT" ? id : a)))));
    after = snapshot();
  }, 120_000); // twenty processes at once on a loaded machine: a bound for liveness only

  test.each(cases.map((c, i) => [c[0].join(" "), c[1], i] as const))("%s fails with one line naming %s", (_args, named, i) => {
    const r = results[i]!;
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(named);
  });

  test("none of them changed the database", () => {
    expect(after).toBe(before);
  });
});

describe("configuration errors", () => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: "abc" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ SWITCHYARD_UPSTREAM_URL: "not a url" }, "SWITCHYARD_UPSTREAM_URL"],
    [{ SWITCHYARD_UPSTREAM_URL: "http://127.0.0.1:9/v1/chat/completions" }, "SWITCHYARD_UPSTREAM_URL"],
    [{ SWITCHYARD_UPSTREAM_URL: "http://user:hunter2@127.0.0.1:9/v1" }, "SWITCHYARD_UPSTREAM_URL"],
    [{ SWITCHYARD_UPSTREAM_URL: "http://127.0.0.1:9/v1?key=1" }, "SWITCHYARD_UPSTREAM_URL"],
    [{ SWITCHYARD_ADMIN_TOKEN: "short" }, "SWITCHYARD_ADMIN_TOKEN"],
    [{ SWITCHYARD_RATE_LIMIT_RPM: "0" }, "SWITCHYARD_RATE_LIMIT_RPM"],
    [{ SWITCHYARD_CONCURRENCY_LIMIT: "many" }, "SWITCHYARD_CONCURRENCY_LIMIT"],
    [{ SWITCHYARD_ADMIN_TOKEN: "sekrit", SWITCHYARD_UPSTREAM_KEY: "upstream-secret-key", PORT: "abc" }, "SWITCHYARD_ADMIN_TOKEN"],
    [{ HOST: "not-a-host", PORT: "0" }, "HOST"],
    [{ SWITCHYARD_CATALOG: "/nonexistent/catalog.json", PORT: "0" }, "SWITCHYARD_CATALOG"],
    [{ SWITCHYARD_DATA_DIR: "/proc/no-such-dir/data", PORT: "0" }, "SWITCHYARD_DATA_DIR"],
  ];
  let results: Awaited<ReturnType<typeof cliAsync>>[] = [];
  beforeAll(async () => {
    results = await Promise.all(cases.map(([env]) => cliAsync(["serve"], { HOST: "127.0.0.1", ...env })));
  }, 30_000);

  test.each(cases.map((c, i) => [JSON.stringify(c[0]), c[1], i] as const))("%s stops start-up with one line naming %s", (_env, variable, i) => {
    const r = results[i]!;
    expect(r.code).not.toBe(0);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(r.stderr).not.toContain("hunter2");
    expect(r.stdout).toBe("");
  });

  test("a port that is already in use stops start-up naming PORT (no silent port sharing)", async () => {
    // The first server asks for SO_REUSEPORT, as a second Switchyard would: sharing must still fail.
    const first = Bun.serve({ port: 0, hostname: "127.0.0.1", reusePort: true, fetch: () => new Response("first") });
    try {
      const r = await cliAsync(["serve"], { HOST: "127.0.0.1", PORT: String(first.port) });
      expect(r.code).not.toBe(0);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(`PORT: ${first.port} is already in use`);
    } finally {
      first.stop(true);
    }
  });

  test("a secret in a bad configuration is never printed", () => {
    for (const r of results) {
      expect(r.stderr).not.toContain("sekrit");
      expect(r.stderr).not.toContain("upstream-secret-key");
    }
  });
});

describe("models pull", () => {
  test("--provider reaches the command: cuda's files are pulled, an unknown provider is refused naming the flag", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-cli-pull-"));
    try {
      // Nothing listens on port 1: the pull fails at once, after saying which files it is for.
      const env = { SWITCHYARD_MODELS_DIR: modelsDir, HF_ENDPOINT: "http://127.0.0.1:1" };
      const cuda = await cliAsync(["models", "pull", "--provider", "cuda", "embedding-300m"], env);
      expect(cuda.code).toBe(1);
      expect(cuda.stderr).toContain("(files for cuda)");
      const gpu = await cliAsync(["models", "pull", "--provider", "gpu"], env);
      expect(gpu.code).toBe(2);
      expect(gpu.stderr.trim().split("\n")).toHaveLength(1);
      expect(gpu.stderr).toContain("--provider must be cpu or cuda, got 'gpu'");
    } finally {
      rmSync(modelsDir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe("models list", () => {
  test("voices are what voices/*.bin holds; none is marked required", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-cli-models-"));
    try {
      const { writeTinyKokoro } = await import("./support/tiny-kokoro");
      writeTinyKokoro(modelsDir, { voices: ["jf_alpha", "jm_kumo"] });
      const out = cli(["models", "list"], { SWITCHYARD_MODELS_DIR: modelsDir });
      expect(out.code).toBe(0);
      expect(out.stdout).toContain("present  voices/*.bin: 2 voice pack(s): jf_alpha, jm_kumo");
      expect(out.stdout).toContain("present  onnx/model.onnx");
      expect(out.stdout).not.toContain("af_heart");
      const empty = cli(["models", "list"], { SWITCHYARD_MODELS_DIR: join(modelsDir, "nothing") });
      expect(empty.stdout).toMatch(/missing {2}voices\/\*\.bin: at least one voice pack is needed/);
    } finally {
      rmSync(modelsDir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe("commands are checked before anything is opened", () => {
  test.each([
    [["frobnicate"]], [["accounts", "frob"]], [["keys", "create"]], [["credits", "add", "acct_x"]], [["accounts", "list", "extra"]],
    [["accounts", "create", "alice", "--credts", "25"]], [["keys", "create", "acct_x", "--limit"]],
  ])(
    "%p exits 2 and creates no data directory, in the working directory or SWITCHYARD_DATA_DIR",
    (args) => {
      const cwd = mkdtempSync(join(tmpdir(), "switchyard-cli-empty-"));
      const home = mkdtempSync(join(tmpdir(), "switchyard-cli-home-")); // Bun may keep a cache in $HOME
      try {
        const p = Bun.spawnSync([BUN, join(ROOT, "src/main.ts"), ...args], { cwd, env: { PATH: process.env.PATH ?? "", HOME: home }, stdout: "pipe", stderr: "pipe" });
        expect(p.exitCode).toBe(2);
        expect(p.stderr.toString().trim().split("\n")).toHaveLength(1);
        expect(readdirSync(cwd)).toEqual([]);
        const elsewhere = join(cwd, "elsewhere");
        const q = Bun.spawnSync([BUN, join(ROOT, "src/main.ts"), ...args], { cwd, env: { PATH: process.env.PATH ?? "", HOME: home, SWITCHYARD_DATA_DIR: elsewhere }, stdout: "pipe", stderr: "pipe" });
        expect(q.exitCode).toBe(2);
        expect(existsSync(elsewhere)).toBe(false);
      } finally {
        rmSync(cwd, { recursive: true, force: true });
        rmSync(home, { recursive: true, force: true });
      }
    },
    30_000,
  );
});

describe("list commands print tables; --json prints JSON", () => {
  test("accounts list, keys list and ledger", () => {
    const id = cli(["accounts", "create", "table-person", "--credits", "3"]).json.id as string;
    const made = cli(["keys", "create", id, "--name", "laptop"]).json;
    const accounts = cli(["accounts", "list"]);
    expect(accounts.code).toBe(0);
    expect(accounts.json).toBeNull();
    const [head, ...rows] = accounts.stdout.trim().split("\n");
    expect(head!.split(/\s{2,}/)).toEqual(["ID", "NAME", "BALANCE", "RESERVED", "DISABLED", "RPM", "CONCURRENCY", "CREATED"]);
    expect(rows.find((r) => r.startsWith(id + " "))!.split(/\s+/).slice(0, 5)).toEqual([id, "table-person", "3.00", "0.00", "no"]);
    const keys = cli(["keys", "list", "--json", id]); // --json takes no value: the id stays an argument
    expect(keys.json.data.map((k: { id: string }) => k.id)).toEqual([made.id]);
    const keyTable = cli(["keys", "list", id]).stdout.trim().split("\n");
    expect(keyTable[0]!.split(/\s{2,}/)).toEqual(["ID", "PREFIX", "NAME", "CREATED", "REVOKED"]);
    expect(keyTable[1]!.split(/\s+/).slice(0, 3)).toEqual([made.id, made.prefix, "laptop"]);
    expect(keyTable.join("\n")).not.toContain(made.key);
    const ledger = cli(["ledger", id]).stdout.trim().split("\n");
    expect(ledger).toHaveLength(2);
    expect(ledger[1]).toContain("initial credits");
  });

  test("an empty list says so", () => {
    const id = cli(["accounts", "create", "no-keys"]).json.id as string;
    expect(cli(["keys", "list", id]).stdout).toBe("no keys\n");
  });
});

describe("version", () => {
  test("version, --version and -v print the version, commit, build date, Bun and ONNX Runtime versions", async () => {
    const pkg = await Bun.file(join(ROOT, "package.json")).json();
    const ort = await Bun.file(join(ROOT, "node_modules/onnxruntime-node/package.json")).json();
    const outs = [cli(["version"]), cli(["--version"]), cli(["-v"])];
    for (const r of outs) {
      expect(r.code).toBe(0);
      const lines = r.stdout.trim().split("\n");
      expect(lines[0]).toBe(`switchyard ${pkg.version}`);
      const fields = Object.fromEntries(lines.slice(1).map((l) => l.split(/\s+/, 2)));
      expect(Object.keys(fields)).toEqual(["commit", "built", "bun", "onnxruntime", "platform"]);
      expect(fields.commit).toMatch(/^[0-9a-f]{7,}(-dirty)?$|^unknown$/);
      expect(fields.bun).toBe(Bun.version);
      expect(fields.onnxruntime).toBe(ort.version);
    }
    expect(outs[0]!.stdout).toBe(outs[2]!.stdout);
    expect(cli(["version", "--json"]).json).toMatchObject({ version: pkg.version, bun: Bun.version, onnxruntime: ort.version, built: "from source" });
  });
});

describe("doctor", () => {
  test("checks the data and models directories, every upstream (hosts shown, keys never) and the ONNX provider", async () => {
    const fake = startFakeUpstream({}, { models: [{ id: "glm-4.6" }] });
    const dead = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const deadUrl = `http://127.0.0.1:${dead.port}/v1`;
    dead.stop(true); // nothing listens there now
    const routes = JSON.stringify({
      upstreams: { good: { base_url: `${fake.url}`, api_key: "route-secret-key" }, gone: { base_url: deadUrl } },
      models: {},
    });
    try {
      const r = await cliAsync(["doctor"], { SWITCHYARD_UPSTREAM_URL: `${fake.url}`, SWITCHYARD_UPSTREAM_KEY: "default-secret-key", SWITCHYARD_ROUTES: routes, SWITCHYARD_MODELS_DIR: join(dataDir, "no-models") });
      const report = JSON.parse(r.stdout);
      expect(report.data_dir).toMatchObject({ ok: true, path: dataDir, exists: true, writable: true });
      expect(report.data_dir.free_bytes).toBeGreaterThan(0);
      expect(report.models_dir).toMatchObject({ ok: true, exists: false });
      expect(report.onnx_provider).toMatchObject({ ok: true, setting: "auto", provider: "cpu" });
      expect(report.onnx_provider.libraries.map((l: { name: string }) => l.name)).toContain("libonnxruntime_providers_cuda.so");
      expect(report.upstreams).toEqual([
        { name: "default", url: `${fake.url}/models`, reachable: true, status: 200, ok: true },
        { name: "good", url: `${fake.url}/models`, reachable: true, status: 200, ok: true },
        expect.objectContaining({ name: "gone", url: `${deadUrl}/models`, reachable: false, ok: false }),
      ]);
      expect(r.code).toBe(1); // one upstream is down
      expect(r.stdout + r.stderr).not.toContain("secret-key");
    } finally {
      fake.stop();
    }
  }, 30_000);

  test("a data directory that cannot be written fails the check; doctor creates nothing", async () => {
    const file = join(dataDir, "not-a-dir");
    await Bun.write(file, "x");
    const r = await cliAsync(["doctor"], { SWITCHYARD_DATA_DIR: file });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).data_dir).toMatchObject({ ok: false, error: "exists but is not a directory" });
    const missing = join(dataDir, "later", "data");
    const ok = await cliAsync(["doctor"], { SWITCHYARD_DATA_DIR: missing });
    expect(JSON.parse(ok.stdout).data_dir).toMatchObject({ ok: true, exists: false, writable: true });
    expect(existsSync(join(dataDir, "later"))).toBe(false);
  }, 30_000);

  test("a broken configuration is a failed check; the native checks still run", async () => {
    const r = await cliAsync(["doctor"], { PORT: "abc" });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.configuration.ok).toBe(false);
    expect(report.configuration.error).toContain("PORT");
    expect(report.onnxruntime.ok).toBe(true);
  }, 30_000);
});

describe("start-up line", () => {
  /** Starts `serve` with PORT=0 at a log level, returns its stderr up to the "listening" line, then stops it (silent: src/log.test.ts). */
  async function firstLines(level: string): Promise<string> {
    const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), "serve"], {
      cwd: tmpdir(),
      env: childEnv({ PORT: "0", HOST: "0.0.0.0", SWITCHYARD_LOG_LEVEL: level }),
      stdout: "ignore",
      stderr: "pipe",
    });
    let text = "";
    const dec = new TextDecoder();
    const reader = p.stderr.getReader();
    try {
      while (!/"msg":"listening".*\n/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value, { stream: true });
      }
      return text;
    } finally {
      p.kill("SIGTERM");
      await p.exited;
    }
  }

  test.each(["error", "info"])("at level %s: the bound address (PORT=0 gives a real port) and a reachable one", async (level) => {
    const lines = (await firstLines(level)).trim().split("\n").map((l) => JSON.parse(l));
    const line = lines.find((l) => l.msg === "listening")!;
    expect(line).toMatchObject({ level: "info", version: expect.any(String) });
    expect(line.listen).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    const port = Number(line.listen.split(":").pop());
    expect(port).toBeGreaterThan(0);
    expect(line.url).toBe(`http://127.0.0.1:${port}`);
  }, 30_000);
});

describe("healthcheck", () => {
  test("exit 0 against a server answering /healthz 200, 1 (one line) when nothing listens or it is unhealthy", async () => {
    const healthy = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => (new URL(req.url).pathname === "/healthz" ? Response.json({ status: "ok" }) : new Response("", { status: 404 })) });
    const sick = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("", { status: 503 }) });
    const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const gonePort = gone.port;
    gone.stop(true);
    try {
      expect((await cliAsync(["healthcheck"], { HOST: "0.0.0.0", PORT: String(healthy.port) })).code).toBe(0);
      const unhealthy = await cliAsync(["healthcheck"], { HOST: "127.0.0.1", PORT: String(sick.port) });
      expect(unhealthy.code).toBe(1);
      expect(unhealthy.stderr).toContain("answered 503");
      const down = await cliAsync(["healthcheck"], { PORT: String(gonePort) });
      expect(down.code).toBe(1);
      expect(down.stderr.trim().split("\n")).toHaveLength(1);
    } finally {
      healthy.stop(true);
      sick.stop(true);
    }
  }, 30_000);
});
