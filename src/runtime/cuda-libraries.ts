/**
 * Finding the libraries ONNX Runtime's CUDA provider needs, in the order: the system
 * first (the library path, CUDA's own folders, an installed onnxruntime-gpu or PyTorch
 * environment), then the runtime folder that `switchyard runtime pull cuda` fills. Pure over the
 * file system: the places searched are computed from the environment and can be given in tests.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { CUDA_LIBRARIES, type CudaLibrary } from "./cuda-manifest";

export interface FoundLibrary {
  library: CudaLibrary;
  /** The file, or null when no place searched has it. */
  path: string | null;
  /** "system" (with its folder in `path`) or "runtime folder". */
  source: "system" | "runtime folder" | null;
}

type Env = Record<string, string | undefined>;

/** Folders under `parent` whose names start with `prefix` (python3.12, cuda-13.0, ...). */
function matching(parent: string, prefix: string): string[] {
  try {
    return readdirSync(parent).filter((n) => n.startsWith(prefix)).sort().reverse().map((n) => join(parent, n));
  } catch {
    return [];
  }
}

/** Where Python keeps packages: a virtualenv or conda env, the user's, the system's. */
function sitePackages(env: Env, home: string | null): string[] {
  const roots = [env.VIRTUAL_ENV, env.CONDA_PREFIX, home ? join(home, ".local") : undefined, "/usr/local", "/usr", "/opt/conda"].filter((r): r is string => Boolean(r));
  return roots.flatMap((root) => matching(join(root, "lib"), "python3").flatMap((py) => [join(py, "site-packages"), join(py, "dist-packages")]));
}

/** The system's places, in the order searched. */
export function systemLibraryDirs(env: Env, home: string | null, arch: string = process.arch): string[] {
  const multiarch = arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  const cuda = [env.CUDA_HOME, env.CUDA_PATH].filter((c): c is string => Boolean(c));
  const python = sitePackages(env, home).flatMap((site) => [
    join(site, "onnxruntime", "capi"),
    join(site, "nvidia", "cu13", "lib"),
    join(site, "nvidia", "cudnn", "lib"),
    ...["cuda_runtime", "cublas", "cufft", "curand"].map((p) => join(site, "nvidia", p, "lib")),
    join(site, "torch", "lib"),
  ]);
  const dirs = [
    ...(env.LD_LIBRARY_PATH ?? "").split(":").filter(Boolean),
    ...cuda.flatMap((c) => [join(c, "lib64"), join(c, "lib")]),
    "/usr/local/cuda/lib64",
    ...matching("/usr/local", "cuda-13").map((c) => join(c, "lib64")),
    `/usr/lib/${multiarch}`,
    "/usr/lib64",
    "/usr/lib",
    ...python,
  ];
  return [...new Set(dirs)];
}

/** Each library and where it was found (system places first, then the runtime folder's lib/). */
export function findCudaLibraries(systemDirs: string[], runtimeLibDir: string, libraries: readonly CudaLibrary[] = CUDA_LIBRARIES): FoundLibrary[] {
  return libraries.map((library) => {
    for (const dir of systemDirs) {
      const path = join(dir, library.name);
      if (existsSync(path)) return { library, path, source: "system" as const };
    }
    const path = join(runtimeLibDir, library.name);
    return existsSync(path) ? { library, path, source: "runtime folder" as const } : { library, path: null, source: null };
  });
}
