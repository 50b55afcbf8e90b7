/**
 * The one executable, end to end: the release script (release.ts --host, the host's part of
 * `npm run release`) builds it with its SHA256SUMS into a temporary directory, and it runs from
 * another directory with nothing of the repository around it. It must answer --version and
 * --help, open an ONNX Runtime session on a tiny model and decode a PNG with sharp (`doctor`),
 * which means it extracted and pre-loaded its embedded native libraries, and serve the API
 * against a fake upstream: models list and one billed chat completion. `demo` serves its three
 * printed requests from the models embedded in the binary.
 *
 * Building takes a few seconds. Skip only deliberately: SWITCHYARD_SKIP_BINARY_TEST=1.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import pkg from "../package.json" with { type: "json" };
import { parseTarget } from "../build";
import { hostReleaseName, sha256File } from "../release";
import { loadSharp } from "../src/images/sharp";
import { buildOnnxModel } from "./support/onnx-builder";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { expectedChatCost } from "./support/expected-cost";
import { countTextTokens } from "../src/tokens/tokens";
import { replay, spawnDemo } from "./support/demo-process";
import { writeEmbeddingModel } from "./support/embedding-fixture";

const SKIP = process.env.SWITCHYARD_SKIP_BINARY_TEST === "1";
if (SKIP) console.warn("test/binary.test.ts: compiled-binary tests SKIPPED because SWITCHYARD_SKIP_BINARY_TEST=1");

const REPO = join(import.meta.dir, "..");
const HOST_TARGET = process.platform === "darwin" ? "bun-darwin-arm64" : process.arch === "arm64" ? "bun-linux-arm64" : "bun-linux-x64";
const ADMIN_TOKEN = "binary-test-admin-token-0123456789";

describe("build.ts target parsing", () => {
  test.each([
    [undefined, "bun-linux-x64", "linux", "x64"],
    ["", "bun-linux-x64", "linux", "x64"],
    ["x64", "bun-linux-x64", "linux", "x64"],
    ["arm64", "bun-linux-arm64", "linux", "arm64"],
    ["aarch64", "bun-linux-arm64", "linux", "arm64"],
    ["linux-arm64", "bun-linux-arm64", "linux", "arm64"],
    ["bun-linux-x64-baseline", "bun-linux-x64-baseline", "linux", "x64"],
    ["BUN-LINUX-ARM64", "bun-linux-arm64", "linux", "arm64"],
    ["bun-darwin-arm64", "bun-darwin-arm64", "darwin", "arm64"],
    ["darwin-arm64", "bun-darwin-arm64", "darwin", "arm64"],
  ])("%p → %s", (raw, target, os, arch) => {
    expect(parseTarget(raw)).toEqual({ target, os: os as "linux" | "darwin", arch: arch as "x64" | "arm64" });
  });

  test.each(["bun-darwin-x64", "bun-windows-x64", "bun-linux-x64-musl", "riscv64", "linux"])("%p is refused with the supported list", (raw) => {
    expect(() => parseTarget(raw)).toThrow(/bun-linux-arm64 or bun-darwin-arm64/);
  });

  test("the release names one file per target; this machine's is among them", () => {
    expect(hostReleaseName("linux", "x64")).toBe("switchyard-linux-x64");
    expect(hostReleaseName("linux", "arm64")).toBe("switchyard-linux-arm64");
    expect(hostReleaseName("darwin", "arm64")).toBe("switchyard-darwin-arm64");
    expect(hostReleaseName("darwin", "x64")).toBeNull();
    expect(hostReleaseName("win32", "x64")).toBeNull();
  });
});

describe.skipIf(SKIP)("compiled binary", () => {
  let tmp: string;
  let bin: string;
  let cwd: string;
  let releaseDir: string;
  let env: Record<string, string>;

  const run = (args: string[], extraEnv: Record<string, string> = {}) => {
    const p = Bun.spawnSync([bin, ...args], { cwd, env: { ...env, ...extraEnv }, timeout: 30_000 });
    return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "switchyard-binary-"));
    releaseDir = join(tmp, "release");
    bin = join(releaseDir, hostReleaseName()!);
    cwd = join(tmp, "elsewhere");
    for (const d of ["elsewhere", "home", "cache", "tmp"]) mkdirSync(join(tmp, d), { recursive: true });
    const build = Bun.spawn([process.execPath, "run", "release.ts", "--host", "--out", releaseDir], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    const [code, out, err] = await Promise.all([build.exited, new Response(build.stdout).text(), new Response(build.stderr).text()]);
    if (code !== 0) throw new Error(`release.ts --host failed (${code}):\n${out}\n${err}`);
    // Nothing of the developer's environment: its own HOME, cache and temp dirs, no SWITCHYARD_*.
    env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(tmp, "home"), XDG_CACHE_HOME: join(tmp, "cache"), TMPDIR: join(tmp, "tmp"), SWITCHYARD_LOG_LEVEL: "warn" };
  }, 90_000);

  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("the release directory holds the binary and a SHA256SUMS line that matches it", async () => {
    expect(readdirSync(releaseDir).sort()).toEqual(["SHA256SUMS", hostReleaseName()!]);
    const sums = await Bun.file(join(releaseDir, "SHA256SUMS")).text();
    expect(sums).toBe(`${await sha256File(bin)}  ${hostReleaseName()}\n`);
    // The same format `sha256sum -c` reads, checked by the tool itself where it exists.
    const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: releaseDir });
    if (check.exitCode !== null && !check.stderr.toString().includes("not found")) expect(check.stdout.toString().trim()).toBe(`${hostReleaseName()}: OK`);
  });

  test("answers --version (version, commit, build date, Bun, ONNX Runtime) and --help from another directory", () => {
    expect(statSync(bin).size).toBeGreaterThan(50 * 1024 * 1024);
    const v = run(["--version"]);
    expect(v.code).toBe(0);
    const lines = v.stdout.trim().split("\n");
    expect(lines[0]).toBe(`switchyard ${pkg.version}`);
    const fields = Object.fromEntries(lines.slice(1).map((l) => l.split(/\s+/, 2)));
    const git = Bun.spawnSync(["git", "-C", REPO, "rev-parse", "HEAD"]).stdout.toString().trim();
    expect(git.startsWith(fields.commit.replace(/-dirty$/, ""))).toBe(true);
    expect(fields.built).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(fields.bun).toBe(Bun.version);
    expect(fields.onnxruntime).toBe("1.30.0");
    expect(run(["-v"]).stdout).toBe(v.stdout);
    expect(run(["version"]).stdout).toBe(v.stdout);
    const h = run(["--help"]);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain("switchyard doctor");
    expect(h.stdout).toContain("accounts create");
  });

  test("doctor opens an ONNX Runtime session and decodes a PNG through the embedded libraries", async () => {
    const model = join(cwd, "add.onnx");
    await Bun.write(
      model,
      buildOnnxModel({
        inputs: [
          { name: "a", type: "float32", dims: [2] },
          { name: "b", type: "float32", dims: [2] },
        ],
        outputs: [{ name: "sum", type: "float32", dims: [2] }],
        nodes: [{ op: "Add", inputs: ["a", "b"], outputs: ["sum"] }],
      }),
    );
    const image = join(cwd, "red.png");
    await loadSharp()({ create: { width: 7, height: 5, channels: 3, background: { r: 255, g: 0, b: 0 } } }).png().toFile(image);

    // Relative paths: they resolve against the binary's working directory.
    const r = run(["doctor", "--onnx", "add.onnx", "--run", "--image", "red.png"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.native.compiled).toBe(true);
    expect(report.native.target).toBe(HOST_TARGET);
    expect(report.native.cacheDir).toBe(join(tmp, "cache", "switchyard", `${pkg.version}-${report.native.bundleId}`));
    const libs = report.native.libraries.map((l: { group: string; name: string; preloaded: boolean }) => `${l.group}/${l.name}:${l.preloaded}`);
    expect(libs).toContain("onnxruntime/libonnxruntime.so.1:true");
    expect(libs.some((l: string) => /^sharp\/libvips-cpp\.so\.[\d.]+:true$/.test(l))).toBe(true);
    for (const l of report.native.libraries) expect(existsSync(l.path)).toBe(true);

    expect(report.onnxruntime).toMatchObject({ ok: true, version: "1.30.0" });
    expect(report.onnxruntime.session).toMatchObject({ inputs: ["a", "b"], outputs: ["sum"], run: { sum: { type: "float32", dims: [2] } } });
    expect(report.sharp).toMatchObject({ ok: true, image: { format: "png", width: 7, height: 5, channels: 3 } });

    // A second start reuses the extracted libraries (same paths, no re-extraction needed).
    const again = JSON.parse(run(["doctor"]).stdout);
    expect(again.native.cacheDir).toBe(report.native.cacheDir);
  });

  test("two processes starting together on an empty cache both extract and load the libraries", async () => {
    const fresh = { ...env, XDG_CACHE_HOME: join(tmp, "cache-race") };
    const procs = [0, 1].map(() => Bun.spawn([bin, "doctor"], { cwd, env: fresh, stdout: "pipe", stderr: "pipe" }));
    const results = await Promise.all(procs.map(async (p) => ({ code: await p.exited, out: await new Response(p.stdout).text() })));
    for (const r of results) {
      expect(r.code).toBe(0);
      const report = JSON.parse(r.out);
      expect(report.onnxruntime.ok && report.sharp.ok).toBe(true);
      // Only whole files are left: no .partial copies from the process that lost the race.
      for (const lib of report.native.libraries) {
        expect(statSync(lib.path).size).toBeGreaterThan(1024 * 1024);
        expect(readdirSync(dirname(lib.path)).filter((f) => f.endsWith(".partial"))).toEqual([]);
      }
    }
  });

  test("doctor reports a broken model as a failed check, not a crash", async () => {
    await Bun.write(join(cwd, "broken.onnx"), "this is not a model");
    const r = run(["doctor", "--onnx", "broken.onnx"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.onnxruntime.ok).toBe(false);
    expect(typeof report.onnxruntime.error).toBe("string");
    expect(report.sharp.ok).toBe(true);
    expect(run(["doctor", "--image"]).code).toBe(2);
  });

  test("demo serves chat, speech and embeddings from its embedded models, and SIGTERM ends it", async () => {
    const demo = await spawnDemo([bin, "demo", "--port", "0"], cwd, env);
    try {
      const chat = await replay(demo, "chat");
      expect(chat.status).toBe(200);
      expect(((await chat.json()) as any).choices[0].message.content).toBe("Hello, Switchyard!");
      const speech = await replay(demo, "speech");
      expect(speech.status).toBe(200);
      expect(speech.headers.get("content-type")).toBe("audio/mpeg");
      expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(0);
      const embeddings = await replay(demo, "embeddings");
      expect(embeddings.status).toBe(200);
      expect(((await embeddings.json()) as any).data[0].embedding.length).toBeGreaterThan(0);
      demo.proc.kill("SIGTERM");
      expect(await demo.proc.exited).toBe(0);
      expect(existsSync(demo.folder)).toBe(false);
    } finally {
      demo.proc.kill("SIGKILL");
    }
  });

  test("embeddings are tokenised in the tokenizer thread the binary carries, and answered", async () => {
    const models = join(tmp, "models");
    writeEmbeddingModel(models);
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const server = Bun.spawn([bin], {
      cwd,
      env: { ...env, PORT: String(port), HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: join(tmp, "data-embeddings"), SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN, SWITCHYARD_MODELS_DIR: models, SWITCHYARD_LOG_LEVEL: "info", SWITCHYARD_EMBEDDING_TOKENIZER_THREADS: "1" },
      stdout: "ignore",
      stderr: "pipe",
    });
    let log = "";
    void (async () => {
      const dec = new TextDecoder();
      for await (const chunk of server.stderr as ReadableStream<Uint8Array>) log += dec.decode(chunk, { stream: true });
    })();
    try {
      const deadline = Date.now() + 30_000;
      while (!log.includes("embedding model loaded")) {
        if (server.exitCode !== null || Date.now() > deadline) throw new Error(`no embedding model loaded: ${log.slice(-2000)}`);
        await Bun.sleep(50);
      }
      const loaded = JSON.parse(log.split("\n").find((l) => l.includes("embedding model loaded"))!);
      expect(loaded.tokenizer_threads).toBe(1);
      const base = `http://127.0.0.1:${port}`;
      const admin = (path: string, body: unknown) => fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      const acct = (await (await admin("/admin/accounts", { name: "embedder", credits: 1 })).json()) as { id: string };
      const key = (await (await admin(`/admin/accounts/${acct.id}/keys`, { name: "k" })).json()) as { key: string };
      const res = await fetch(`${base}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        // Large enough (1,250 characters, 5 vectors of floats) to be handed to the thread, not done in the event loop.
        body: JSON.stringify({ model: "embedding-300m", input: Array.from({ length: 5 }, (_, i) => `${"hello world the cat ".repeat(12)}${i}`.slice(0, 250)) }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { index: number; embedding: number[] }[] };
      expect(body.data.map((d) => [d.index, d.embedding.length])).toEqual([0, 1, 2, 3, 4].map((i) => [i, 768]));
    } finally {
      server.kill("SIGTERM");
      await server.exited;
    }
  }, 60_000);

  describe("serving", () => {
    let upstream: FakeUpstream;
    let server: Subprocess;
    let base: string;
    let stderr = "";

    beforeAll(async () => {
      upstream = startFakeUpstream();
      // PORT=0 would work, but the test must know the port: take a free one from the OS.
      const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
      const port = probe.port;
      probe.stop(true);
      base = `http://127.0.0.1:${port}`;
      server = Bun.spawn([bin], {
        cwd,
        env: { ...env, PORT: String(port), HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: join(tmp, "data"), SWITCHYARD_ADMIN_TOKEN: ADMIN_TOKEN, SWITCHYARD_UPSTREAM_URL: upstream.url },
        stdout: "ignore",
        stderr: "pipe",
      });
      const deadline = Date.now() + 20_000;
      for (;;) {
        if (server.exitCode !== null) throw new Error(`binary exited ${server.exitCode}: ${await new Response(server.stderr as ReadableStream).text()}`);
        const ok = await fetch(`${base}/v1`).then((r) => r.ok, () => false);
        if (ok) break;
        if (Date.now() > deadline) throw new Error("binary did not start listening within 20 s");
        await Bun.sleep(50);
      }
      void (async () => {
        const dec = new TextDecoder();
        for await (const chunk of server.stderr as ReadableStream<Uint8Array>) stderr += dec.decode(chunk, { stream: true });
      })();
    }, 30_000);

    afterAll(async () => {
      server?.kill("SIGTERM");
      await server?.exited;
      upstream?.stop();
    });

    test("GET /healthz answers (the foundation smoke test: with /v1/models and --version)", async () => {
      const res = await fetch(`${base}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: "ok" });
    });

    test("GET /v1/models lists the embedded catalog", async () => {
      const res = await fetch(`${base}/v1/models`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { object: string; data: { id: string }[] };
      expect(body.object).toBe("list");
      const ids = body.data.map((m) => m.id);
      expect(ids).toContain("kimi-k2-instruct");
      expect(ids).toContain("kimi-k2-instruct-turbo");
    });

    test("a chat completion through the binary is answered and billed exactly", async () => {
      const admin = (method: string, path: string, body?: unknown) =>
        fetch(base + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      const acct = (await (await admin("POST", "/admin/accounts", { name: "binary", credits: 1 })).json()) as { id: string };
      const key = (await (await admin("POST", `/admin/accounts/${acct.id}/keys`, { name: "k" })).json()) as { key: string };

      const res = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "kimi-k2-instruct", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.model).toBe("kimi-k2-instruct");
      expect(body.choices[0].message.content).toBe("Hello from the fake upstream.");
      expect(body.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 6 });

      const after = (await (await admin("GET", `/admin/accounts/${acct.id}`)).json()) as { balance: number; reserved: number };
      expect(Math.round(after.balance * 1e9)).toBe(1_000_000_000 - expectedChatCost("kimi-k2-instruct", 11, 6));
      expect(after.reserved).toBe(0);

      // Streamed: the relay's own upstream client (its socket's receive buffer set through
      // bun:ffi), the frames it writes and frees, all as compiled.
      const streamed = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "kimi-k2-instruct", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(streamed.status).toBe(200);
      const events = (await streamed.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
      expect(events.at(-1)).toBe("[DONE]");
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("Hello from the fake upstream.");
      expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 6 });
      const final = (await (await admin("GET", `/admin/accounts/${acct.id}`)).json()) as { balance: number; reserved: number };
      expect(Math.round(final.balance * 1e9)).toBe(1_000_000_000 - 2 * expectedChatCost("kimi-k2-instruct", 11, 6));
      expect(final.reserved).toBe(0);
    });

    test("the dashboard is served from the binary (bundled at build time, no files needed) and signs in", async () => {
      const page = await fetch(`${base}/dashboard`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      const html = await page.text();
      const version = /app\.js\?v=([0-9a-f]+)/.exec(html)?.[1];
      expect(version).toBeDefined();
      const js = await fetch(`${base}/dashboard/assets/app.js?v=${version}`);
      expect(js.status).toBe(200);
      expect(js.headers.get("content-type")).toContain("javascript");
      const script = await js.text();
      // The same bundle the source tree makes (Preact + htm + uPlot and our views).
      expect(script).toContain("/dashboard/api");
      expect(script.length).toBeGreaterThan(20_000);
      const css = await fetch(`${base}/dashboard/assets/app.css`);
      expect(css.status).toBe(200);
      expect(await css.text()).toContain(".uplot");
      const signIn = await fetch(`${base}/dashboard/api/session`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ kind: "operator", secret: ADMIN_TOKEN }),
      });
      expect(signIn.status).toBe(200);
      expect(signIn.headers.get("set-cookie")).toContain("HttpOnly; SameSite=Strict");
    });

    test("long texts are counted in the token worker, which the binary carries", async () => {
      const admin = (method: string, path: string, body?: unknown) =>
        fetch(base + path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      const acct = (await (await admin("POST", "/admin/accounts", { name: "counter", credits: 1 })).json()) as { id: string };
      const key = (await (await admin("POST", `/admin/accounts/${acct.id}/keys`, { name: "k" })).json()) as { key: string };
      const text = "count me please ".repeat(10_000);
      const res = await fetch(`${base}/v1/messages/count_tokens`, {
        method: "POST",
        headers: { "x-api-key": key.key, "content-type": "application/json" },
        body: JSON.stringify({ model: "kimi-k2-instruct", messages: [{ role: "user", content: text }] }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { input_tokens: number }).input_tokens).toBe(8 + countTextTokens(text));
      await Bun.sleep(100);
      expect(stderr).not.toContain("worker could not start");
    });

    test("Elysia hooks see the matched route in the bundled code (metrics are labelled by endpoint)", async () => {
      // Elysia decides what a hook receives by reading its source, which bundling and
      // minification rewrite: the lifecycle hook must still see `route`.
      await fetch(`${base}/v1/models`);
      const text = await (await fetch(`${base}/metrics`)).text();
      expect(text).toContain('endpoint="/v1/models"');
      expect(text).not.toContain('endpoint="unmatched"');
    });

    test("switchyard_build_info names the version and the commit build.ts compiled", async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      const info = text.split("\n").find((l) => l.startsWith("switchyard_build_info{"));
      expect(info).toContain(`version="${pkg.version}"`);
      const git = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: REPO, stderr: "ignore" });
      const commit = git.exitCode === 0 ? git.stdout.toString().trim() : "unknown";
      // git describe's spelling, as `switchyard version` shows it: -dirty when built from a changed tree.
      expect(info).toMatch(new RegExp(`commit="${commit}(-dirty)?"`));
    });
  });
});
