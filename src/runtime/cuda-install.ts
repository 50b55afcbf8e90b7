/**
 * Filling the CUDA runtime folder: `switchyard runtime pull cuda` downloads the pinned wheels
 * (cuda-manifest.ts) through the package index's JSON API, resumable and checksum-verified by the
 * same downloader as `models pull`; `switchyard runtime install PATH` takes wheels or libraries
 * copied in by hand (air-gapped boxes). Either way only the shared libraries ONNX Runtime's CUDA
 * provider needs are kept, in <runtime folder>/lib, and a wheel is deleted once unpacked.
 */
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from "node:fs";
import { basename, join } from "node:path";
import { ChecksumError, DownloadError, OfflineError, pullModel, sha256File, type ProgressSink } from "../engines/model-download";
import { CUDA_LIBRARIES, CUDA_WHEELS, type Arch, type CudaLibrary, type PinnedWheel } from "./cuda-manifest";
import { extractEntry, listZip } from "./zip";

export { ChecksumError, DownloadError, OfflineError };

export class InstallError extends Error {}

export interface InstallOptions {
  runtimeDir: string;
  arch: Arch;
  wheels?: readonly PinnedWheel[];
  libraries?: readonly CudaLibrary[];
  /** Packages whose libraries the system already has: not downloaded. */
  skipPackages?: ReadonlySet<string>;
  log?: (line: string) => void;
}

export interface PullWheelsOptions extends InstallOptions {
  /** The package index (PyPI or a mirror of its JSON API). */
  indexUrl: string;
  fetch?: typeof fetch;
  progress?: ProgressSink;
}

export const libDir = (runtimeDir: string) => join(runtimeDir, "lib");

function wheelsFor(o: InstallOptions): PinnedWheel[] {
  const libraries = o.libraries ?? CUDA_LIBRARIES;
  const needed = new Set(libraries.map((l) => l.package));
  return (o.wheels ?? CUDA_WHEELS).filter((w) => w.arch === o.arch && needed.has(w.package) && !o.skipPackages?.has(w.package));
}

/** The index's address, checked: an http(s) URL (a mirror on the local network may be plain http). */
function indexBase(indexUrl: string): URL {
  let url: URL;
  try {
    url = new URL(indexUrl);
  } catch {
    throw new DownloadError(`the package index ${JSON.stringify(indexUrl.slice(0, 200))} must be an http:// or https:// URL (SWITCHYARD_PYPI_URL or --index)`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new DownloadError(`the package index must be an http:// or https:// URL (SWITCHYARD_PYPI_URL or --index), not ${url.protocol}`);
  return url;
}

/**
 * Where the index says a pinned wheel file is (resolved against its JSON document's address).
 * Only an https:// link, or one on the index's own origin, is followed: the pins make any bytes
 * safe to install, but a link must not make the command read a local file (file://) or reach a
 * plain-http host the operator never named.
 */
async function wheelUrl(f: typeof fetch, indexUrl: string, wheel: PinnedWheel): Promise<string> {
  const base = indexBase(indexUrl);
  const doc = `${base.href.replace(/\/+$/, "")}/pypi/${wheel.package}/json`;
  let res: Response;
  try {
    res = await f(doc);
  } catch (e) {
    throw new OfflineError(`cannot reach the package index ${new URL(doc).host} (${(e as Error).message}). Offline? Copy the wheels in by hand and run: switchyard runtime install PATH`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new DownloadError(`${wheel.package}: the package index answered HTTP ${res.status}`);
  }
  let body: { releases?: Record<string, { filename: string; url: string }[]> };
  try {
    body = (await res.json()) as typeof body;
  } catch {
    throw new DownloadError(`${wheel.package}: the package index did not answer JSON (is ${base.host} a mirror of PyPI's JSON API?)`);
  }
  const files = body?.releases?.[wheel.version];
  const file = Array.isArray(files) ? files.find((r) => r?.filename === wheel.filename) : undefined;
  if (!file || typeof file.url !== "string") throw new DownloadError(`${wheel.package} ${wheel.version}: the package index has no ${wheel.filename}`);
  let link: URL;
  try {
    link = new URL(file.url, doc);
  } catch {
    throw new DownloadError(`${wheel.package}: the package index links to an address that is not a URL`);
  }
  if (link.protocol !== "https:" && link.origin !== base.origin) {
    throw new DownloadError(`${wheel.package}: the package index links to ${link.protocol}//${link.host}; only https:// links, or links on the index's own origin, are followed`);
  }
  return link.href;
}

/** Unpacks the pinned libraries a wheel carries into the runtime folder's lib/. */
async function unpackWheel(path: string, wheel: PinnedWheel, o: InstallOptions): Promise<string[]> {
  const wanted = new Set((o.libraries ?? CUDA_LIBRARIES).filter((l) => l.package === wheel.package).map((l) => l.name));
  const dir = libDir(o.runtimeDir);
  mkdirSync(dir, { recursive: true });
  const got: string[] = [];
  for (const entry of listZip(path)) {
    const name = basename(entry.name);
    if (!wanted.has(name)) continue;
    const partial = join(dir, `${name}.partial`);
    await extractEntry(path, entry, partial);
    renameSync(partial, join(dir, name));
    got.push(name);
  }
  const missing = [...wanted].filter((n) => !got.includes(n));
  if (missing.length) throw new InstallError(`${wheel.filename} lacks ${missing.join(", ")}`);
  return got;
}

function record(o: InstallOptions, installed: { wheel: string; sha256: string; libraries: string[] }[]): void {
  writeFileSync(join(o.runtimeDir, "installed.json"), JSON.stringify({ installed, at: new Date().toISOString() }, null, 2) + "\n");
}

/** Downloads, verifies and unpacks every pinned wheel the system does not make unnecessary. */
export async function pullCudaRuntime(o: PullWheelsOptions): Promise<string[]> {
  const f = o.fetch ?? globalThis.fetch;
  const log = o.log ?? (() => {});
  const wheels = wheelsFor(o);
  const downloads = join(o.runtimeDir, "downloads");
  const files = await Promise.all(wheels.map(async (w) => ({ path: w.filename, url: await wheelUrl(f, o.indexUrl, w), sha256: w.sha256, bytes: w.size })));
  const installed: { wheel: string; sha256: string; libraries: string[] }[] = [];
  for (const [i, wheel] of wheels.entries()) {
    // One file at a time, with the models downloader: resumable, retried, checked against the pin.
    await pullModel({ modelId: wheel.package, dir: "downloads", source: o.indexUrl, files: [files[i]!] }, { modelsDir: o.runtimeDir, fetch: f, progress: o.progress, log });
    const path = join(downloads, wheel.filename);
    const libraries = await unpackWheel(path, wheel, o);
    rmSync(path, { force: true });
    installed.push({ wheel: wheel.filename, sha256: wheel.sha256, libraries });
    log(`${wheel.package} ${wheel.version}: ${libraries.join(", ")}`);
  }
  rmSync(downloads, { recursive: true, force: true });
  record(o, installed);
  return installed.flatMap((i) => i.libraries);
}

/** What a path that is not a regular file or a directory is, in words (`viaLink`: reached through a symbolic link). */
function special(st: Stats, viaLink: boolean): string {
  const what = st.isDirectory() ? "a directory" : st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : st.isCharacterDevice() || st.isBlockDevice() ? "a device" : "not a regular file";
  return `${what}${viaLink ? " (through a symbolic link)" : ""}`;
}

function refused(path: string, what: string): InstallError {
  return new InstallError(`${path}: is ${what}, not a regular file; runtime install takes wheels and libraries only`);
}

/**
 * Every regular file under `dir` (symbolic links to regular files included). A FIFO, a socket, a
 * device or a symbolic link to a directory is refused: reading one could wait for ever, and a
 * linked directory could loop.
 */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else if (e.isFile()) out.push(p);
    else if (e.isSymbolicLink()) {
      let st: Stats;
      try {
        st = statSync(p);
      } catch {
        throw new InstallError(`${p}: is a symbolic link to nothing; runtime install takes wheels and libraries only`);
      }
      if (!st.isFile()) throw refused(p, special(st, true));
      out.push(p);
    } else throw refused(p, special(lstatSync(p), false));
  }
  return out;
}

/**
 * Installs from a folder copied in by hand (or one wheel): pinned wheels are verified and
 * unpacked; loose libraries with the expected names are copied as they are (reported as
 * unverified: there is no pin for a single library).
 */
export async function installCudaRuntime(source: string, o: InstallOptions): Promise<{ verified: string[]; unverified: string[] }> {
  const log = o.log ?? (() => {});
  if (!existsSync(source)) throw new InstallError(`${source}: no such file or folder`);
  const top = statSync(source);
  if (!top.isDirectory() && !top.isFile()) throw refused(source, special(top, lstatSync(source).isSymbolicLink()));
  const paths = top.isDirectory() ? walk(source) : [source];
  const pinned = new Map(wheelsFor(o).map((w) => [w.filename, w]));
  const libraries = new Set((o.libraries ?? CUDA_LIBRARIES).map((l) => l.name));
  const verified: string[] = [];
  const unverified: string[] = [];
  const installed: { wheel: string; sha256: string; libraries: string[] }[] = [];
  for (const path of paths) {
    const name = basename(path);
    const wheel = pinned.get(name);
    if (wheel) {
      const got = await sha256File(path);
      if (got !== wheel.sha256) throw new ChecksumError(`${name}: checksum mismatch (expected ${wheel.sha256}, got ${got}); not installed`);
      const libs = await unpackWheel(path, wheel, o);
      verified.push(...libs);
      installed.push({ wheel: name, sha256: got, libraries: libs });
      log(`${name}: verified, ${libs.join(", ")}`);
    } else if (libraries.has(name)) {
      mkdirSync(libDir(o.runtimeDir), { recursive: true });
      copyFileSync(path, join(libDir(o.runtimeDir), name));
      unverified.push(name);
      log(`${name}: copied (not verified: only wheels carry a pinned checksum)`);
    }
  }
  if (verified.length + unverified.length === 0) throw new InstallError(`${source}: holds none of the pinned wheels or CUDA libraries (run 'switchyard runtime list' to see which)`);
  record(o, installed);
  return { verified, unverified };
}
