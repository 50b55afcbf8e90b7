/**
 * The command line's operational commands as a real subprocess: bad configuration stops start-up
 * with one line and a non-zero exit (no secret printed), models pull and list, version, doctor,
 * the start-up line and healthcheck. The store commands: test/cli.test.ts.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeUpstream } from "./support/fake-upstream";
import { BUN, ROOT, useCliDataDir } from "./support/cli-process";

const { dataDir, childEnv, cliAsync, cli } = useCliDataDir();

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
