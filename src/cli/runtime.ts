/**
 * `switchyard runtime list | pull cuda | install PATH`: the CUDA provider's libraries.
 *
 * - `list` prints the GPU, the provider SWITCHYARD_ONNX_PROVIDER would pick, and each library
 *   with where it was found (or "missing").
 * - `pull cuda` downloads the pinned PyPI wheels (src/runtime/cuda-manifest.ts) for what the
 *   system lacks, verified by sha256, resumable, with a progress bar, into SWITCHYARD_RUNTIME_DIR
 *   (default <SWITCHYARD_DATA_DIR>/runtime); `--all` ignores what the system has. The index is
 *   PyPI, or SWITCHYARD_PYPI_URL / `--index URL` for a mirror of its JSON API.
 * - `install PATH` takes wheels (or the libraries themselves) copied in by hand.
 */
import type { Config } from "../config";
import { DEFAULT_INDEX_URL, hostArch } from "../runtime/cuda-manifest";
import { ChecksumError, DownloadError, InstallError, installCudaRuntime, libDir, OfflineError, pullCudaRuntime } from "../runtime/cuda-install";
import { findCudaLibraries, systemLibraryDirs } from "../runtime/cuda-libraries";
import { decideProvider, ProviderError } from "../runtime/provider";
import { probeNvidia } from "../runtime/gpu";
import { homedir } from "node:os";
import { StderrProgress } from "./progress";

const USAGE = "usage: switchyard runtime list | switchyard runtime pull cuda [--all] [--index URL] | switchyard runtime install PATH";

function oneLine(e: unknown): string {
  const code = (e as NodeJS.ErrnoException)?.code;
  const text = String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 300);
  return code && !text.includes(code) ? `${code}: ${text}` : text;
}

function systemDirs(env: Record<string, string | undefined>): string[] {
  return systemLibraryDirs(env, env.HOME || homedir());
}

function list(config: Config, env: Record<string, string | undefined>): number {
  const gpu = probeNvidia();
  const out = (line: string) => process.stdout.write(line + "\n");
  out(gpu ? `GPU: ${gpu.gpus.map((g) => `${g.name}${g.memoryMiB ? `, ${g.memoryMiB} MiB` : ""}`).join("; ")} (driver ${gpu.driver})` : "GPU: none (no NVIDIA kernel driver loaded)");
  try {
    const d = decideProvider(config.onnxProvider, { runtimeDir: config.runtimeDir, env });
    out(`provider: ${d.provider} (SWITCHYARD_ONNX_PROVIDER=${config.onnxProvider}: ${d.reason})`);
  } catch (e) {
    if (!(e instanceof ProviderError)) throw e;
    out(`provider: none (SWITCHYARD_ONNX_PROVIDER=cuda: ${e.message})`);
  }
  out(`runtime folder: ${libDir(config.runtimeDir)}`);
  const found = findCudaLibraries(systemDirs(env), libDir(config.runtimeDir));
  const width = Math.max(...found.map((f) => f.library.name.length));
  for (const f of found) out(`  ${f.library.name.padEnd(width)}  ${f.path === null ? "missing" : `${f.source}: ${f.path}`}`);
  return 0;
}

export async function runRuntimeCommand(config: Config, sub: string | undefined, rest: string[], flags: Record<string, string | boolean>, env: Record<string, string | undefined> = process.env): Promise<number> {
  const err = (line: string) => process.stderr.write(`switchyard: ${line}\n`);
  if (sub === "list") return list(config, env);
  const arch = hostArch();
  if ((sub === "pull" && rest[0] === "cuda" && rest.length === 1) || (sub === "install" && rest.length === 1)) {
    if (arch === null) {
      err(`the CUDA provider is for Linux on x64 or arm64; this is ${process.platform}-${process.arch}`);
      return 1;
    }
  } else {
    err(USAGE);
    return 2;
  }
  // What the system already has is not downloaded again (unless --all).
  const found = findCudaLibraries(flags.all ? [] : systemDirs(env), "/nonexistent");
  const systemHas = new Set<string>();
  for (const pkg of new Set(found.map((f) => f.library.package))) {
    if (found.filter((f) => f.library.package === pkg).every((f) => f.source === "system")) systemHas.add(pkg);
  }
  const log = (line: string) => process.stderr.write(line + "\n");
  try {
    if (sub === "pull") {
      const indexUrl = typeof flags.index === "string" ? flags.index : (env.SWITCHYARD_PYPI_URL?.trim() || DEFAULT_INDEX_URL);
      for (const pkg of systemHas) log(`${pkg}: found on the system, not downloaded`);
      const libs = await pullCudaRuntime({ runtimeDir: config.runtimeDir, arch, indexUrl, skipPackages: systemHas, progress: new StderrProgress(), log });
      log(`installed ${libs.length} libraries in ${libDir(config.runtimeDir)}`);
    } else {
      const r = await installCudaRuntime(rest[0]!, { runtimeDir: config.runtimeDir, arch, log });
      log(`installed ${r.verified.length + r.unverified.length} libraries in ${libDir(config.runtimeDir)}${r.unverified.length ? ` (${r.unverified.length} copied without a checksum)` : ""}`);
    }
  } catch (e) {
    if (e instanceof OfflineError || e instanceof DownloadError || e instanceof ChecksumError || e instanceof InstallError) {
      err((e as Error).message);
      return 1;
    }
    // Anything else (a wheel that is not a zip, a folder that cannot be read, a full disk): one
    // line saying what failed, never a stack trace.
    err(`runtime ${sub}: ${oneLine(e)}`);
    return 1;
  }
  return list(config, env);
}
