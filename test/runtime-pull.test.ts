/**
 * The CUDA runtime without a GPU: `runtime pull` against a local package index serving small
 * wheels this test builds (pins checked, a cut download resumed, only the libraries kept), the
 * offline path (`runtime install` from a folder), and the start-up and CLI lines a GPU-less
 * machine gets.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChecksumError, DownloadError, InstallError, installCudaRuntime, OfflineError, pullCudaRuntime } from "../src/runtime/cuda-install";
import { CUDA_WHEELS, type CudaLibrary, type PinnedWheel } from "../src/runtime/cuda-manifest";
import { ENDLESS_BOUND, startPackageIndex } from "./support/package-index";
import { serveLoopback } from "./support/loopback-server";
import { buildZip } from "./support/wheel";

const MAIN = join(import.meta.dir, "../src/main.ts");
const cleanups: Array<() => void> = [];
afterAll(() => cleanups.forEach((c) => c()));

// Two small wheels in the layout of the real ones; libraries with filler so a download can be cut.
const filler = (n: number) => new Uint8Array(n).map((_, i) => (i * 7919) % 251);
const libraries: CudaLibrary[] = [
  { name: "libcudart.so.13", package: "nvidia-cuda-runtime", symbol: "cudaGetDeviceCount" },
  { name: "libonnxruntime_providers_shared.so", package: "onnxruntime-gpu" },
  { name: "libonnxruntime_providers_cuda.so", package: "onnxruntime-gpu" },
];
const runtimeWheel = buildZip({ "nvidia/cu13/lib/libcudart.so.13": filler(300_000), "nvidia/cu13/lib/libcudart_static.a": "static", "nvidia_cuda_runtime-13.0.96.dist-info/METADATA": "x" });
const ortWheel = buildZip({ "onnxruntime/capi/libonnxruntime_providers_cuda.so": filler(200_000), "onnxruntime/capi/libonnxruntime_providers_shared.so": "shared", "onnxruntime/__init__.py": "" });
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const pins: PinnedWheel[] = [
  { package: "nvidia-cuda-runtime", version: "13.0.96", arch: "x64", filename: "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", sha256: sha(runtimeWheel), size: runtimeWheel.length },
  { package: "onnxruntime-gpu", version: "1.30.0", arch: "x64", filename: "onnxruntime_gpu-1.30.0-cp312-cp312-manylinux_2_28_x86_64.whl", sha256: sha(ortWheel), size: ortWheel.length },
];
const served = [
  { package: pins[0]!.package, version: pins[0]!.version, filename: pins[0]!.filename, bytes: runtimeWheel },
  { package: pins[1]!.package, version: pins[1]!.version, filename: pins[1]!.filename, bytes: ortWheel },
];

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "switchyard-runtime-"));
}

describe("runtime pull", () => {
  test("downloads the pinned wheels, resumes a cut download, keeps only the libraries", async () => {
    const index = startPackageIndex(served);
    cleanups.push(index.stop);
    index.cutAfter.set(pins[0]!.filename, 100_000);
    const runtimeDir = tempDir();
    const lines: string[] = [];
    const got = await pullCudaRuntime({ runtimeDir, arch: "x64", indexUrl: index.url, wheels: pins, libraries, log: (l) => lines.push(l) });
    expect(got.sort()).toEqual(["libcudart.so.13", "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"]);
    expect(readdirSync(join(runtimeDir, "lib")).sort()).toEqual(got);
    expect(readdirSync(runtimeDir).sort()).toEqual(["installed.json", "lib"]);
    expect(new Uint8Array(readFileSync(join(runtimeDir, "lib", "libcudart.so.13")))).toEqual(filler(300_000));
    // The cut download was resumed from where it stopped, not started again.
    const ranges = index.ranges.get(pins[0]!.filename)!;
    expect(ranges[0]).toBeNull();
    expect(ranges[1]).toMatch(/^bytes=\d+-$/);
    expect(Number(/\d+/.exec(ranges[1]!)![0])).toBeGreaterThan(0);
  });

  test("a wheel whose sha256 is not the pinned one is refused and nothing is installed", async () => {
    const tampered = { ...served[0]!, bytes: buildZip({ "nvidia/cu13/lib/libcudart.so.13": "evil" }) };
    const index = startPackageIndex([tampered]);
    cleanups.push(index.stop);
    const runtimeDir = tempDir();
    const err = await pullCudaRuntime({ runtimeDir, arch: "x64", indexUrl: index.url, wheels: [pins[0]!], libraries }).catch((e) => e);
    expect(err).toBeInstanceOf(ChecksumError);
    expect((err as Error).message).toContain(`expected ${pins[0]!.sha256}`);
    expect(existsSync(join(runtimeDir, "lib"))).toBe(false);
  });

  test("packages the system already has are skipped", async () => {
    const index = startPackageIndex(served);
    cleanups.push(index.stop);
    const runtimeDir = tempDir();
    const got = await pullCudaRuntime({ runtimeDir, arch: "x64", indexUrl: index.url, wheels: pins, libraries, skipPackages: new Set(["nvidia-cuda-runtime"]) });
    expect(got.sort()).toEqual(["libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"]);
    expect(index.ranges.has(pins[0]!.filename)).toBe(false);
  });

  test("an unreachable index says to install offline", async () => {
    const err = await pullCudaRuntime({ runtimeDir: tempDir(), arch: "x64", indexUrl: "http://127.0.0.1:9", wheels: pins, libraries }).catch((e) => e);
    expect(err).toBeInstanceOf(OfflineError);
    expect((err as Error).message).toContain("switchyard runtime install PATH");
  });

  test("the real pins are enforced by the command: a look-alike wheel from the index is refused", async () => {
    const lookAlikes = CUDA_WHEELS.filter((w) => w.arch === "x64").map((w) => ({ package: w.package, version: w.version, filename: w.filename, bytes: runtimeWheel }));
    const real = CUDA_WHEELS.find((w) => w.arch === "x64")!;
    const index = startPackageIndex(lookAlikes);
    cleanups.push(index.stop);
    const dir = tempDir();
    const p = Bun.spawn([process.execPath, MAIN, "runtime", "pull", "cuda", "--all", "--index", index.url], {
      env: { ...process.env, SWITCHYARD_DATA_DIR: dir, SWITCHYARD_LOG_LEVEL: "silent" }, stdout: "pipe", stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    if (process.arch !== "x64" || process.platform !== "linux") return;
    expect(code).toBe(1);
    expect(stderr).toContain(`checksum mismatch (expected ${real.sha256}`);
    expect(existsSync(join(dir, "runtime", "lib"))).toBe(false);
  });
});

describe("runtime pull trusts its mirror no further than the pins", () => {
  test("a body that does not end is stopped past the pinned size, and nothing of it is kept", async () => {
    const index = startPackageIndex([served[0]!]);
    cleanups.push(index.stop);
    index.endless.add(pins[0]!.filename);
    const runtimeDir = tempDir();
    let written = 0;
    const progress = { start() {}, advance: (n: number) => void (written += n), done() {} };
    const err = await pullCudaRuntime({ runtimeDir, arch: "x64", indexUrl: index.url, wheels: [pins[0]!], libraries, progress }).catch((e) => e);
    expect(err).toBeInstanceOf(ChecksumError);
    expect((err as Error).message).toContain(`longer than its pinned size of ${pins[0]!.size} bytes`);
    // Written: at most the pinned size; asked of the mirror: one request, not one per retry.
    expect(written).toBeLessThanOrEqual(pins[0]!.size);
    expect(index.endlessSent.get(pins[0]!.filename)!).toBeLessThan(ENDLESS_BOUND);
    expect(existsSync(join(runtimeDir, "downloads", pins[0]!.filename + ".part"))).toBe(false);
    expect(existsSync(join(runtimeDir, "lib"))).toBe(false);
  });

  test.each([
    ["file://", () => "file:///etc/passwd"],
    ["http:// on another origin", () => "http://127.0.0.2:9/files/x.whl"],
    ["a data: URL", () => "data:application/zip;base64,AAAA"],
  ])("a %s link in the index is refused, naming the package", async (_what, link) => {
    const index = startPackageIndex([served[0]!]);
    cleanups.push(index.stop);
    index.linkOf.set(pins[0]!.filename, link());
    const err = await pullCudaRuntime({ runtimeDir: tempDir(), arch: "x64", indexUrl: index.url, wheels: [pins[0]!], libraries }).catch((e) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as Error).message).toContain(`${pins[0]!.package}: the package index links to`);
    expect((err as Error).message).toContain("only https:// links, or links on the index's own origin, are followed");
  });

  test("an index that is not http(s), or answers no JSON, is one clear error", async () => {
    const bad = await pullCudaRuntime({ runtimeDir: tempDir(), arch: "x64", indexUrl: "file:///etc", wheels: [pins[0]!], libraries }).catch((e) => e);
    expect(bad).toBeInstanceOf(DownloadError);
    expect((bad as Error).message).toContain("must be an http:// or https:// URL");
    const { server, url } = serveLoopback({ fetch: () => new Response("<html>", { status: 200 }) });
    cleanups.push(() => server.stop(true));
    const html = await pullCudaRuntime({ runtimeDir: tempDir(), arch: "x64", indexUrl: url, wheels: [pins[0]!], libraries }).catch((e) => e);
    expect(html).toBeInstanceOf(DownloadError);
    expect((html as Error).message).toContain("did not answer JSON");
  });
});

describe("runtime install (offline)", () => {
  test("verified wheels and loose libraries from a folder", async () => {
    const src = tempDir();
    mkdirSync(join(src, "wheels"));
    writeFileSync(join(src, "wheels", pins[1]!.filename), ortWheel);
    writeFileSync(join(src, "libcudart.so.13"), "loose");
    writeFileSync(join(src, "unrelated.txt"), "x");
    const runtimeDir = tempDir();
    const r = await installCudaRuntime(src, { runtimeDir, arch: "x64", wheels: pins, libraries });
    expect(r.verified.sort()).toEqual(["libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"]);
    expect(r.unverified).toEqual(["libcudart.so.13"]);
    expect(readdirSync(join(runtimeDir, "lib")).sort()).toEqual(["libcudart.so.13", "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so"]);
  });

  test("a tampered wheel is refused", async () => {
    const src = tempDir();
    writeFileSync(join(src, pins[1]!.filename), buildZip({ "onnxruntime/capi/libonnxruntime_providers_cuda.so": "evil" }));
    const err = await installCudaRuntime(src, { runtimeDir: tempDir(), arch: "x64", wheels: pins, libraries }).catch((e) => e);
    expect(err).toBeInstanceOf(ChecksumError);
  });
});

describe("runtime install refuses what is not a regular file", () => {
  test("a FIFO named like a library is refused at once, nothing installed", async () => {
    const src = tempDir();
    const fifo = join(src, "libcudart.so.13");
    Bun.spawnSync(["mkfifo", fifo]);
    // The old code copied it with copyFileSync, which waits for a writer: this one frees it after a while.
    const writer = Bun.spawn(["sh", "-c", `sleep 20; echo x > ${fifo}`], { stdout: "ignore", stderr: "ignore" });
    try {
      const runtimeDir = tempDir();
      const err = await installCudaRuntime(src, { runtimeDir, arch: "x64", wheels: pins, libraries }).catch((e) => e);
      expect(err).toBeInstanceOf(InstallError);
      expect((err as Error).message).toBe(`${fifo}: is a FIFO, not a regular file; runtime install takes wheels and libraries only`);
      expect(existsSync(join(runtimeDir, "lib"))).toBe(false);
    } finally {
      writer.kill();
    }
  });

  test("the command prints one line for a symbolic link to a directory, and for a FIFO as PATH", async () => {
    const src = tempDir();
    symlinkSync(tmpdir(), join(src, "libcudart.so.13"));
    const fifoDir = tempDir();
    const fifo = join(fifoDir, "wheels");
    Bun.spawnSync(["mkfifo", fifo]);
    const run = async (path: string) => {
      const p = Bun.spawn([process.execPath, MAIN, "runtime", "install", path], { env: { ...process.env, SWITCHYARD_DATA_DIR: tempDir(), SWITCHYARD_LOG_LEVEL: "silent" }, stdout: "pipe", stderr: "pipe" });
      const timer = setTimeout(() => p.kill(), 30_000);
      const [code, stderr] = await Promise.all([p.exited, new Response(p.stderr).text()]);
      clearTimeout(timer);
      return { code, stderr };
    };
    const [link, pipe] = await Promise.all([run(src), run(fifo)]);
    if (process.platform !== "linux" || (process.arch !== "x64" && process.arch !== "arm64")) return;
    for (const [r, what] of [[link, "is a directory (through a symbolic link), not a regular file"], [pipe, "is a FIFO, not a regular file"]] as const) {
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toStartWith("switchyard: ");
      expect(lines[0]).toContain(what);
    }
  });
});

describe("on a machine without a GPU", () => {
  const run = async (args: string[], env: Record<string, string>) => {
    const dir = tempDir();
    const p = Bun.spawn([process.execPath, MAIN, ...args], { env: { ...process.env, PORT: "0", HOST: "127.0.0.1", SWITCHYARD_DATA_DIR: dir, SWITCHYARD_MODELS_DIR: join(dir, "models"), ...env }, stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => p.kill(), 20_000);
    const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
    clearTimeout(timer);
    return { code, stdout, stderr };
  };

  test.skipIf(existsSync("/proc/driver/nvidia/version"))("SWITCHYARD_ONNX_PROVIDER=cuda stops start-up naming what is missing and the fix", async () => {
    const r = await run(["serve"], { SWITCHYARD_ONNX_PROVIDER: "cuda" });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("configuration error: SWITCHYARD_ONNX_PROVIDER: cuda: no NVIDIA GPU");
    expect(r.stderr).toContain("install the driver");
  });

  test.skipIf(existsSync("/proc/driver/nvidia/version"))("runtime list says which provider auto picks and lists every library", async () => {
    const r = await run(["runtime", "list"], {});
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("GPU: none");
    expect(r.stdout).toContain("provider: cpu (SWITCHYARD_ONNX_PROVIDER=auto: no NVIDIA GPU");
    expect(r.stdout).toMatch(/libonnxruntime_providers_cuda\.so\s+missing/);
  });

  test("unknown runtime sub-commands print the usage", async () => {
    const r = await run(["runtime", "pull", "rocm"], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage: switchyard runtime list");
  });
});
