/**
 * Which execution provider the local models run on, decided once per process:
 *
 * - `cpu`: always CPU.
 * - `auto` (the default): CUDA when an NVIDIA driver is loaded and every library the CUDA
 *   provider needs is found (cuda-libraries.ts), else CPU; the reason is logged with each model.
 * - `cuda`: CUDA, or a start-up error naming what is missing and the command that fixes it.
 *
 * Using CUDA means making its libraries loadable before ONNX Runtime creates a session: the
 * provider's own two libraries are put next to libonnxruntime (where ONNX Runtime looks for
 * them), and the CUDA libraries are dlopen'ed by absolute path in dependency order, so the
 * dynamic linker then satisfies the provider's NEEDED entries by soname (as src/runtime/native.ts
 * does for libonnxruntime itself). LD_LIBRARY_PATH is not needed.
 */
import { dlopen, FFIType } from "bun:ffi";
import { copyFileSync, existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CUDA_LIBRARIES, hostArch, PROVIDER_LIBRARIES, type Arch } from "./cuda-manifest";
import { findCudaLibraries, systemLibraryDirs, type FoundLibrary } from "./cuda-libraries";
import { libDir } from "./cuda-install";
import { probeNvidia, type GpuInfo } from "./gpu";
import { nativeStatus, prepareNative } from "./native";

export type ProviderSetting = "auto" | "cpu" | "cuda";

export interface ProviderDecision {
  provider: "cpu" | "cuda";
  /** One line for the log: why this provider. */
  reason: string;
  gpu: GpuInfo | null;
  libraries: FoundLibrary[];
}

/** SWITCHYARD_ONNX_PROVIDER=cuda cannot be honoured; the message says what to do. */
export class ProviderError extends Error {}

const FIX = "run 'switchyard runtime pull cuda' (offline: 'switchyard runtime install PATH' with the wheels copied in), or set SWITCHYARD_ONNX_PROVIDER=cpu";

/** The decision from what was probed. Pure. */
export function chooseProvider(setting: ProviderSetting, arch: Arch | null, gpu: GpuInfo | null, libraries: FoundLibrary[]): ProviderDecision {
  const decided = (provider: "cpu" | "cuda", reason: string): ProviderDecision => ({ provider, reason, gpu, libraries });
  if (setting === "cpu") return decided("cpu", "SWITCHYARD_ONNX_PROVIDER=cpu");
  const refuse = (why: string): ProviderDecision => {
    if (setting === "cuda") throw new ProviderError(why);
    return decided("cpu", why);
  };
  if (arch === null) return refuse(`CUDA needs Linux on x64 or arm64 (this is ${process.platform}-${process.arch})`);
  if (gpu === null || gpu.gpus.length === 0) {
    return refuse("no NVIDIA GPU: the NVIDIA kernel driver is not loaded (/proc/driver/nvidia/version is missing); install the driver (580 or newer for CUDA 13)");
  }
  const missing = libraries.filter((l) => l.path === null).map((l) => l.library.name);
  const gpuName = `${gpu.gpus[0]!.name} (driver ${gpu.driver})`;
  if (missing.length > 0) return refuse(`${gpuName} found, but the CUDA provider's libraries are missing: ${missing.join(", ")}; ${FIX}`);
  const sources = [...new Set(libraries.map((l) => l.source))].join(" and ");
  return decided("cuda", `${gpuName}, CUDA libraries from the ${sources}`);
}

export interface ProbeOptions {
  runtimeDir: string;
  env?: Record<string, string | undefined>;
  procRoot?: string;
}

/** Probes this machine and decides. Throws ProviderError for `cuda` that cannot be honoured. */
export function decideProvider(setting: ProviderSetting, o: ProbeOptions): ProviderDecision {
  const env = o.env ?? process.env;
  let home: string | null = null;
  try {
    home = env.HOME || homedir();
  } catch {
    home = null;
  }
  const arch = hostArch();
  const gpu = setting === "cpu" ? null : probeNvidia(o.procRoot);
  const libraries = setting === "cpu" ? [] : findCudaLibraries(systemLibraryDirs(env, home), libDir(o.runtimeDir));
  return chooseProvider(setting, arch, gpu, libraries);
}

/** Where ONNX Runtime looks for its provider libraries: the folder of libonnxruntime itself. */
export function onnxRuntimeDir(): string {
  prepareNative("onnxruntime");
  const cache = nativeStatus().cacheDir;
  if (cache) return join(cache, "onnxruntime");
  const pkg = createRequire(import.meta.url).resolve("onnxruntime-node/package.json");
  return join(dirname(pkg), "bin", "napi-v6", process.platform, process.arch);
}

const handles: unknown[] = [];
let activated = false;

/** Makes the found CUDA libraries loadable for ONNX Runtime (idempotent). */
export function activateCuda(libraries: FoundLibrary[], ortDir = onnxRuntimeDir()): void {
  if (activated) return;
  for (const found of libraries) {
    const { library, path } = found;
    if (path === null) throw new ProviderError(`${library.name} is missing; ${FIX}`);
    if (PROVIDER_LIBRARIES.has(library.name)) {
      const target = join(ortDir, library.name);
      if (target !== path && (!existsSync(target) || statSync(target).size !== statSync(path).size)) copyFileSync(path, target);
      continue;
    }
    if (!library.symbol) continue;
    try {
      // The symbol is only looked up, never called.
      handles.push(dlopen(path, { [library.symbol]: { args: [], returns: FFIType.void } }));
    } catch (e) {
      throw new ProviderError(`cannot load ${path}: ${String((e as Error)?.message ?? e).split("\n")[0]}`);
    }
  }
  activated = true;
}

export { CUDA_LIBRARIES };
