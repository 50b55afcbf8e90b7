/**
 * `switchyard models pull` against a local HTTP server standing in for Hugging Face (HF_ENDPOINT):
 * downloads into the real layout, resumes with Range after a dropped connection and from a .part
 * left by an earlier run, verifies checksums, skips optional files that are absent, and fails
 * with a clear message when the host cannot be reached.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pullModel, OfflineError, ChecksumError, DownloadError, parseSha256Sums, type ProgressSink } from "../../src/engines/model-download";
import type { ModelManifest } from "../../src/engines/model-files";
import { runModelsCommand } from "../../src/cli/models";
import { loadConfig } from "../../src/config";
import { buildTinyEmbeddingModel } from "../support/onnx-builder";
import { buildTinyTokenizer } from "../support/tiny-tokenizer";
import { EmbeddingEngine } from "../../src/engines/embeddings/engine";

const tok = buildTinyTokenizer();
const FILES: Record<string, Uint8Array> = {
  "onnx/model.onnx": buildTinyEmbeddingModel({ vocabSize: tok.vocabSize }),
  "onnx/model.onnx_data": new Uint8Array(300_000).map((_, i) => (i * 7) & 255),
  "tokenizer.json": new TextEncoder().encode(JSON.stringify(tok.json)),
};
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** Requests seen, and how many times to cut a file's body halfway before serving it whole. */
const seen: { path: string; range: string | null }[] = [];
const cutsLeft = new Map<string, number>();
let server: Server;
let base: string;
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "switchyard-pull-"));
  dirs.push(d);
  return d;
};

beforeAll(async () => {
  // node:http, so a response can be cut mid-body after promising its full Content-Length.
  server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname.replace(/^.*\/resolve\/[^/]+\//, "");
    const range = req.headers.range ?? null;
    seen.push({ path, range });
    const body = FILES[path];
    if (!body) return void res.writeHead(404).end("no");
    const start = range ? Number(/bytes=(\d+)-/.exec(range)![1]) : 0;
    if (start >= body.length) return void res.writeHead(416).end();
    const slice = body.subarray(start);
    const headers: Record<string, string> = { "content-length": String(slice.length) };
    if (range) headers["content-range"] = `bytes ${start}-${body.length - 1}/${body.length}`;
    res.writeHead(range ? 206 : 200, headers);
    const cuts = cutsLeft.get(path) ?? 0;
    if (cuts > 0) {
      cutsLeft.set(path, cuts - 1);
      res.write(slice.subarray(0, Math.floor(slice.length / 2)), () => setTimeout(() => res.socket?.destroy(), 5));
      return;
    }
    res.end(slice);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
afterEach(() => {
  seen.length = 0;
  cutsLeft.clear();
});

const manifest = (files: Partial<Record<string, { sha256?: string | null; optional?: boolean }>> = {}): ModelManifest => ({
  modelId: "embedding-300m",
  dir: "embedding-300m",
  source: "test",
  files: ["onnx/model.onnx", "onnx/model.onnx_data", "tokenizer.json", ...Object.keys(files).filter((p) => !FILES[p])].map((path) => ({
    path,
    url: `https://huggingface.co/org/repo/resolve/main/${path}`,
    sha256: files[path]?.sha256 ?? null,
    bytes: null,
    optional: files[path]?.optional,
  })),
});
const toLocal = (u: string) => u.replace("https://huggingface.co", base);

describe("models pull", () => {
  test("downloads every file into the model's layout, records SHA256SUMS, and the engine loads it", async () => {
    const modelsDir = tempDir();
    const events: string[] = [];
    const progress: ProgressSink = { start: (l) => events.push(`start ${l}`), advance: () => {}, done: () => events.push("done") };
    const out = await pullModel(manifest({ "config.json": { optional: true } }), { modelsDir, rewriteUrl: toLocal, progress });
    expect(out.map((f) => f.status)).toEqual(["downloaded", "downloaded", "downloaded", "missing-optional"]);
    for (const [p, bytes] of Object.entries(FILES)) expect(sha(readFileSync(join(modelsDir, "embedding-300m", p)))).toBe(sha(bytes));
    expect(events).toContain("start onnx/model.onnx_data");
    const sums = parseSha256Sums(readFileSync(join(modelsDir, "embedding-300m", "SHA256SUMS"), "utf8"));
    expect(sums.get("tokenizer.json")).toBe(sha(FILES["tokenizer.json"]!));
    const engine = await EmbeddingEngine.load(join(modelsDir, "embedding-300m"), "cpu");
    expect(engine.dimensions).toBe(768);
    await engine.close();

    // A second pull verifies what is there against SHA256SUMS and fetches nothing.
    seen.length = 0;
    const again = await pullModel(manifest(), { modelsDir, rewriteUrl: toLocal });
    expect(again.every((f) => f.status === "present" && f.verified === "SHA256SUMS")).toBe(true);
    expect(seen).toHaveLength(0);
  });

  test("a dropped connection is resumed with a Range request", async () => {
    const modelsDir = tempDir();
    cutsLeft.set("onnx/model.onnx_data", 1);
    const out = await pullModel(manifest(), { modelsDir, rewriteUrl: toLocal });
    expect(out[1]!.status).toBe("downloaded");
    const dataRequests = seen.filter((s) => s.path === "onnx/model.onnx_data");
    expect(dataRequests).toHaveLength(2);
    expect(dataRequests[1]!.range).toMatch(/^bytes=\d+-$/);
    expect(Number(/\d+/.exec(dataRequests[1]!.range!)![0])).toBeGreaterThan(0);
    expect(sha(readFileSync(join(modelsDir, "embedding-300m", "onnx/model.onnx_data")))).toBe(sha(FILES["onnx/model.onnx_data"]!));
  });

  test("a .part left by an earlier run is resumed, not restarted", async () => {
    const modelsDir = tempDir();
    const dir = join(modelsDir, "embedding-300m", "onnx");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "model.onnx_data.part"), FILES["onnx/model.onnx_data"]!.subarray(0, 1000));
    await pullModel(manifest(), { modelsDir, rewriteUrl: toLocal });
    expect(seen.find((s) => s.path === "onnx/model.onnx_data")!.range).toBe("bytes=1000-");
    expect(sha(readFileSync(join(dir, "model.onnx_data")))).toBe(sha(FILES["onnx/model.onnx_data"]!));
    expect(existsSync(join(dir, "model.onnx_data.part"))).toBe(false);
  });

  test("a checksum mismatch fails, keeps nothing, and a pinned checksum that matches passes", async () => {
    const modelsDir = tempDir();
    const bad = "0".repeat(64);
    await expect(pullModel(manifest({ "tokenizer.json": { sha256: bad } }), { modelsDir, rewriteUrl: toLocal })).rejects.toBeInstanceOf(ChecksumError);
    expect(existsSync(join(modelsDir, "embedding-300m", "tokenizer.json"))).toBe(false);
    expect(existsSync(join(modelsDir, "embedding-300m", "tokenizer.json.part"))).toBe(false);
    const ok = await pullModel(manifest({ "tokenizer.json": { sha256: sha(FILES["tokenizer.json"]!) } }), { modelsDir, rewriteUrl: toLocal });
    expect(ok.find((f) => f.path === "tokenizer.json")!.verified).toBe("manifest");
  });

  test("a required file that is not found fails naming it", async () => {
    const modelsDir = tempDir();
    await expect(pullModel(manifest({ "onnx/missing.bin": {} }), { modelsDir, rewriteUrl: toLocal })).rejects.toThrow(DownloadError);
  });

  test("an unreachable host is reported as offline", async () => {
    const modelsDir = tempDir();
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const deadBase = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const err = await pullModel(manifest(), { modelsDir, rewriteUrl: (u) => u.replace("https://huggingface.co", deadBase) }).catch((e) => e);
    expect(err).toBeInstanceOf(OfflineError);
    expect(String(err.message)).toContain("offline");
  });

  test("the CLI pulls through HF_ENDPOINT and exits 1 with a clear line when offline", async () => {
    const modelsDir = tempDir();
    const config = loadConfig({ SWITCHYARD_MODELS_DIR: modelsDir, SWITCHYARD_DATA_DIR: join(modelsDir, "data") });
    const writes: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    (process.stderr as any).write = (s: string) => (writes.push(String(s)), true);
    try {
      expect(await runModelsCommand(config, "pull", ["embedding-300m"], {}, { HF_ENDPOINT: base, HF_TOKEN: "secret-token-value" })).toBe(0);
      expect(existsSync(join(modelsDir, "embedding-300m", "onnx", "model.onnx"))).toBe(true);
      expect(await runModelsCommand(config, "pull", ["no-such-model"], {}, {})).toBe(2);
      rmSync(join(modelsDir, "embedding-300m"), { recursive: true });
      expect(await runModelsCommand(config, "pull", [], {}, { HF_ENDPOINT: "http://127.0.0.1:1" })).toBe(1);
    } finally {
      (process.stderr as any).write = orig;
    }
    const text = writes.join("");
    expect(text).toContain("Are you offline?");
    expect(text).not.toContain("secret-token-value");
  });
});

describe("models pull by provider", () => {
  test.each([
    ["cpu", "onnx/model_quantized.onnx", "onnx/model.onnx"],
    ["cuda", "onnx/model.onnx", "onnx/model_quantized.onnx"],
  ] as const)("voice-82m with --provider %s fetches %s and not %s", async (provider, wanted, skipped) => {
    FILES["onnx/model_quantized.onnx"] = new Uint8Array(1000).map((_, i) => i & 255);
    FILES["voices/af_heart.bin"] = new Uint8Array(510 * 256 * 4);
    const modelsDir = tempDir();
    const config = loadConfig({ SWITCHYARD_MODELS_DIR: modelsDir, SWITCHYARD_DATA_DIR: join(modelsDir, "data") });
    const orig = process.stderr.write.bind(process.stderr);
    (process.stderr as any).write = () => true;
    try {
      expect(await runModelsCommand(config, "pull", ["voice-82m"], { provider }, { HF_ENDPOINT: base })).toBe(0);
    } finally {
      (process.stderr as any).write = orig;
    }
    const dir = join(modelsDir, "voice-82m");
    expect(existsSync(join(dir, wanted))).toBe(true);
    expect(existsSync(join(dir, skipped))).toBe(false);
    expect(seen.some((s) => s.path === skipped)).toBe(false);
    // The graph comes last, after every voice pack.
    const graphAt = seen.findIndex((s) => s.path === wanted);
    expect(seen.slice(graphAt + 1).length).toBe(0);
  });

  test("an unknown --provider is a usage error naming the rule", async () => {
    const modelsDir = tempDir();
    const config = loadConfig({ SWITCHYARD_MODELS_DIR: modelsDir, SWITCHYARD_DATA_DIR: join(modelsDir, "data") });
    const writes: string[] = [];
    const orig = process.stderr.write.bind(process.stderr);
    (process.stderr as any).write = (s: string) => (writes.push(String(s)), true);
    try {
      expect(await runModelsCommand(config, "pull", [], { provider: "gpu" }, {})).toBe(2);
    } finally {
      (process.stderr as any).write = orig;
    }
    expect(writes.join("")).toContain("--provider must be cpu or cuda, got 'gpu'");
  });
});
