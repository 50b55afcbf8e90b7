/**
 * Files named in configuration (SWITCHYARD_ROUTES, SWITCHYARD_CATALOG, SWITCHYARD_MODEL_ALIASES,
 * an upstream's TLS files) are read off the event loop, regular files only, at most 4 MiB
 * (docs/configuration.md, "Settings"): at start-up a FIFO, a directory, a device or an oversized file stops
 * the server with one line naming the variable and what is wrong, never a hang; a catalog file
 * replaced by a FIFO while serving is refused in the background and the last good catalog serves.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "./support/harness";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";

const MAIN = join(import.meta.dir, "../src/main.ts");
const dir = mkdtempSync(join(tmpdir(), "switchyard-config-files-"));
const fifo = join(dir, "fifo.json");
Bun.spawnSync(["mkfifo", fifo]);
const big = join(dir, "big.json");
writeFileSync(big, `{ "upstreams": {}, "models": {} ${" ".repeat(4 * 1024 * 1024)}}`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `switchyard serve` with this environment; killed after 30 s (a hang fails the test, it does not stall it). */
async function serve(env: Record<string, string>) {
  const data = mkdtempSync(join(dir, "data-"));
  const p = Bun.spawn([process.execPath, MAIN, "serve"], {
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: data, SWITCHYARD_LOG_LEVEL: "error", ...env },
    stdout: "pipe", stderr: "pipe",
  });
  const timer = setTimeout(() => p.kill(), 30_000);
  const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  clearTimeout(timer);
  return { code, stderr };
}

describe("at start-up", () => {
  const cases: [string, string, string][] = [
    ["SWITCHYARD_ROUTES", fifo, "a FIFO, not a regular file"],
    ["SWITCHYARD_ROUTES", dir, "a directory, not a regular file"],
    ["SWITCHYARD_ROUTES", big, "larger than 4194304 bytes"],
    ["SWITCHYARD_CATALOG", fifo, "a FIFO, not a regular file"],
    ["SWITCHYARD_CATALOG", "/dev/zero", "a device, not a regular file"],
    ["SWITCHYARD_MODEL_ALIASES", fifo, "a FIFO, not a regular file"],
  ];
  let results: Awaited<ReturnType<typeof serve>>[] = [];
  beforeAll(async () => {
    results = await Promise.all(cases.map(([variable, path]) => serve({ [variable]: path })));
  }, 60_000);

  test.each(cases.map((c, i) => [c[0], c[1].slice(dir.length) || c[1], c[2], i] as const))("%s=%s stops start-up: %s", (variable, _path, why, i) => {
    const r = results[i]!;
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toContain(why);
  });
});

describe("while serving", () => {
  let fake: FakeUpstream;
  let h: Harness;
  const catalogFile = join(dir, "catalog.json");
  const entry = { id: "file-model", kind: "chat", owned_by: "acme", context_window: 4096, pricing: { input_per_million: "1", output_per_million: "1" } };

  beforeAll(async () => {
    writeFileSync(catalogFile, JSON.stringify({ models: [entry] }));
    fake = startFakeUpstream();
    h = await startHarness({ SWITCHYARD_UPSTREAM_URL: fake.url, SWITCHYARD_CATALOG: catalogFile });
  });
  afterAll(async () => {
    await h?.stop();
    fake?.stop();
  });

  test("a catalog file replaced by a FIFO is refused in the background; the last good catalog keeps serving", async () => {
    const ids = async () => ((await (await fetch(h.base + "/v1/models")).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(await ids()).toContain("file-model");
    const errors: string[] = [];
    const error = console.error;
    console.error = (...args: unknown[]) => void errors.push(args.map(String).join(" "));
    rmSync(catalogFile);
    Bun.spawnSync(["mkfifo", catalogFile]);
    // The old code read it with readFileSync, which waits for a writer with the whole server stopped.
    const writer = Bun.spawn(["sh", "-c", `sleep 20; echo '{' > ${catalogFile}`], { stdout: "ignore", stderr: "ignore" });
    try {
      for (let i = 0; i < 400 && errors.length === 0; i++) {
        expect(await ids()).toContain("file-model");
        await Bun.sleep(25);
      }
      expect(errors.join("\n")).toContain("a FIFO, not a regular file");
      expect((await fetch(h.base + "/healthz")).status).toBe(200);
    } finally {
      console.error = error;
      writer.kill();
    }
  });
});
