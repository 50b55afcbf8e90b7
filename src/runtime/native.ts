/**
 * Makes the native libraries of onnxruntime-node and sharp loadable inside the compiled binary.
 *
 * `bun build --compile` embeds each `.node` addon and, when it is required, writes it to a
 * temporary file and dlopens it. The addon then asks the dynamic linker for its library
 * (libonnxruntime.so.1, libvips-cpp.so.*) next to itself or along its rpath, where nothing is.
 * So before an addon loads we write its library, once per binary build, to a cache directory
 * and dlopen it: glibc then satisfies the addon's NEEDED entry with the already-loaded object,
 * matched by soname. The libraries also stay in the cache for ONNX Runtime, which loads its
 * execution-provider libraries from its own directory.
 *
 * Cache layout: <root>/switchyard/<version>-<bundleId>/<group>/<soname>, where <root> is
 * $XDG_CACHE_HOME, else ~/.cache, else a private directory in the system temp dir.
 * In development (not compiled) there is nothing embedded and every function here is a no-op.
 */
import { dlopen, FFIType } from "bun:ffi";
import { randomBytes } from "node:crypto";
import { accessSync, constants, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { VERSION } from "../version";
import { nativeAssets, type NativeAsset, type NativeAssets } from "./native-assets";

export type NativeGroup = NativeAsset["group"];

export interface CacheRootCandidate {
  dir: string;
  /** A shared location (the temp dir): only used if it is ours alone. */
  shared: boolean;
}

/**
 * Where the cache may live, best first. XDG_CACHE_HOME must be absolute to count (the XDG spec
 * says relative values are invalid); the temp dir is last and per-user.
 */
export function cacheRootCandidates(env: Record<string, string | undefined>, home: string | null, tmp: string, uid: number): CacheRootCandidate[] {
  const out: CacheRootCandidate[] = [];
  const xdg = env.XDG_CACHE_HOME?.trim();
  if (xdg && isAbsolute(xdg)) out.push({ dir: join(xdg, "switchyard"), shared: false });
  if (home && isAbsolute(home)) out.push({ dir: join(home, ".cache", "switchyard"), shared: false });
  out.push({ dir: join(tmp, `switchyard-${uid}`), shared: true });
  return out;
}

/** The directory for one binary build: a new build never reuses another build's libraries. */
export function versionDir(root: string, version: string, bundleId: string): string {
  return join(root, `${version}-${bundleId}`);
}

function fileSize(path: string): number | null {
  try {
    return statSync(path).size;
  } catch {
    return null;
  }
}

/**
 * Usable means: we can create it and write in it; a shared-location directory must also be a
 * real directory owned by us and not writable by others (no one may plant libraries there).
 */
function usable(c: CacheRootCandidate, uid: number): boolean {
  try {
    mkdirSync(c.dir, { recursive: true, mode: 0o700 });
    if (c.shared) {
      const st = lstatSync(c.dir);
      if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0) return false;
    }
    accessSync(c.dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes one embedded library to `<dir>/<group>/<name>` unless an identical-size copy is there.
 * The copy goes to a unique temporary name first and is renamed into place, so processes that
 * start together never see a half-written library.
 */
export function extractAsset(asset: NativeAsset, dir: string): string {
  const groupDir = join(dir, asset.group);
  const target = join(groupDir, asset.name);
  if (fileSize(target) === asset.size) return target;
  mkdirSync(groupDir, { recursive: true, mode: 0o700 });
  const partial = `${target}.${process.pid}-${randomBytes(4).toString("hex")}.partial`;
  try {
    writeFileSync(partial, readFileSync(asset.embeddedPath), { mode: 0o755 });
    renameSync(partial, target);
  } catch (e) {
    rmSync(partial, { force: true });
    throw e;
  }
  return target;
}

export interface LoadedLibrary {
  group: NativeGroup;
  name: string;
  path: string;
  preloaded: boolean;
}

const assets: NativeAssets = nativeAssets;
let cacheDir: string | null = null;
const prepared = new Set<NativeGroup>();
const loaded: LoadedLibrary[] = [];
// The dlopen handles, kept for the life of the process so the libraries are never unloaded.
const handles: unknown[] = [];

/** Whether this process is the compiled binary (it embeds native libraries). */
export function isCompiled(): boolean {
  return assets.bundleId !== null;
}

function chooseCacheDir(): string {
  if (cacheDir) return cacheDir;
  const uid = process.getuid?.() ?? 0;
  let home: string | null = null;
  try {
    home = process.env.HOME?.trim() || homedir();
  } catch {
    home = null;
  }
  const candidates = cacheRootCandidates(process.env, home, tmpdir(), uid);
  const root = candidates.find((c) => usable(c, uid));
  if (!root) {
    throw new Error(`cannot extract native libraries: none of ${candidates.map((c) => c.dir).join(", ")} is a writable private directory (set XDG_CACHE_HOME)`);
  }
  cacheDir = versionDir(root.dir, VERSION, assets.bundleId!);
  return cacheDir;
}

/**
 * Extracts and pre-loads the embedded libraries of one package (idempotent, synchronous so the
 * sync sharp loader can use it). Call it before requiring that package. No-op in development.
 */
export function prepareNative(group: NativeGroup): void {
  if (!isCompiled() || prepared.has(group)) return;
  const dir = chooseCacheDir();
  const mine = assets.assets.filter((a) => a.group === group);
  // Extract all of the group first: a preloaded library may load its siblings from its directory.
  const paths = mine.map((a) => extractAsset(a, dir));
  mine.forEach((a, i) => {
    const path = paths[i]!;
    if (a.preloadSymbol) {
      // The symbol is only looked up, never called, so its declared signature does not matter.
      handles.push(dlopen(path, { [a.preloadSymbol]: { args: [], returns: FFIType.void } }));
    }
    loaded.push({ group, name: a.name, path, preloaded: a.preloadSymbol !== undefined });
  });
  prepared.add(group);
}

export interface NativeStatus {
  compiled: boolean;
  target: string | null;
  bundleId: string | null;
  /** The per-build cache directory, once a library has been extracted. */
  cacheDir: string | null;
  libraries: LoadedLibrary[];
}

export function nativeStatus(): NativeStatus {
  return { compiled: isCompiled(), target: assets.target, bundleId: assets.bundleId, cacheDir, libraries: [...loaded] };
}

