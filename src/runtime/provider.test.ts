import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findCudaLibraries, systemLibraryDirs } from "./cuda-libraries";
import { CUDA_LIBRARIES } from "./cuda-manifest";
import { probeNvidia, type GpuInfo } from "./gpu";
import { chooseProvider, ProviderError } from "./provider";

const h100: GpuInfo = { driver: "580.159.04", gpus: [{ name: "NVIDIA H100 80GB HBM3", memoryMiB: 81559 }] };
const all = CUDA_LIBRARIES.map((library) => ({ library, path: `/usr/lib/${library.name}`, source: "system" as const }));
const lacking = all.map((f) => (f.library.name === "libcudnn.so.9" ? { ...f, path: null, source: null } : f));

describe("chooseProvider", () => {
  test.each([
    ["auto", "x64", h100, all, "cuda", "NVIDIA H100 80GB HBM3 (driver 580.159.04), CUDA libraries from the system"],
    ["auto", "x64", null, all, "cpu", "no NVIDIA GPU"],
    ["auto", "x64", h100, lacking, "cpu", "missing: libcudnn.so.9; run 'switchyard runtime pull cuda'"],
    ["auto", null, h100, all, "cpu", "CUDA needs Linux on x64 or arm64"],
    ["cpu", "x64", h100, all, "cpu", "SWITCHYARD_ONNX_PROVIDER=cpu"],
    ["cuda", "x64", h100, all, "cuda", "CUDA libraries from the system"],
  ] as const)("%s on %s with gpu %#", (setting, arch, gpu, libs, provider, reason) => {
    const d = chooseProvider(setting, arch, gpu, [...libs]);
    expect(d.provider).toBe(provider);
    expect(d.reason).toContain(reason);
  });

  test.each([
    [null, all, "no NVIDIA GPU"],
    [h100, lacking, "libcudnn.so.9; run 'switchyard runtime pull cuda' (offline: 'switchyard runtime install PATH'"],
  ] as const)("cuda that cannot be honoured throws, saying what to do (%#)", (gpu, libs, message) => {
    expect(() => chooseProvider("cuda", "x64", gpu, [...libs])).toThrow(ProviderError);
    expect(() => chooseProvider("cuda", "x64", gpu, [...libs])).toThrow(message);
  });
});

describe("probeNvidia", () => {
  test("reads the driver version and each GPU's model from /proc; none without the driver", () => {
    const proc = mkdtempSync(join(tmpdir(), "switchyard-proc-"));
    expect(probeNvidia(proc, () => null)).toBeNull();
    mkdirSync(join(proc, "driver/nvidia/gpus/0000:1b:00.0"), { recursive: true });
    writeFileSync(join(proc, "driver/nvidia/version"), "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\nGCC version: gcc 12\n");
    writeFileSync(join(proc, "driver/nvidia/gpus/0000:1b:00.0/information"), "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ: 1\n");
    expect(probeNvidia(proc, () => "81559\n")).toEqual(h100);
  });
});

describe("findCudaLibraries", () => {
  test("the system's places first, then the runtime folder; missing ones reported", () => {
    const root = mkdtempSync(join(tmpdir(), "switchyard-libs-"));
    const system = join(root, "system");
    const runtime = join(root, "runtime");
    mkdirSync(system);
    mkdirSync(runtime);
    writeFileSync(join(system, "libcudart.so.13"), "");
    writeFileSync(join(runtime, "libcudart.so.13"), "");
    writeFileSync(join(runtime, "libcublas.so.13"), "");
    const found = new Map(findCudaLibraries([join(root, "absent"), system], runtime).map((f) => [f.library.name, f]));
    expect(found.get("libcudart.so.13")).toMatchObject({ path: join(system, "libcudart.so.13"), source: "system" });
    expect(found.get("libcublas.so.13")).toMatchObject({ path: join(runtime, "libcublas.so.13"), source: "runtime folder" });
    expect(found.get("libcudnn.so.9")).toMatchObject({ path: null, source: null });
  });

  test("system places include the library path, CUDA_HOME and a virtualenv's onnxruntime-gpu and nvidia packages", () => {
    const venv = mkdtempSync(join(tmpdir(), "switchyard-venv-"));
    mkdirSync(join(venv, "lib", "python3.12"), { recursive: true });
    const dirs = systemLibraryDirs({ LD_LIBRARY_PATH: "/opt/a:/opt/b", CUDA_HOME: "/opt/cuda", VIRTUAL_ENV: venv }, null, "x64");
    expect(dirs.slice(0, 4)).toEqual(["/opt/a", "/opt/b", "/opt/cuda/lib64", "/opt/cuda/lib"]);
    expect(dirs).toContain(join(venv, "lib", "python3.12", "site-packages", "onnxruntime", "capi"));
    expect(dirs).toContain(join(venv, "lib", "python3.12", "site-packages", "nvidia", "cu13", "lib"));
    expect(dirs).toContain("/usr/lib/x86_64-linux-gnu");
  });
});
