/**
 * Downloads the files of a model manifest into SWITCHYARD_MODELS_DIR: resumable (HTTP Range
 * into a .part file, kept across runs and retried within one), checksum-verified (manifest value,
 * else the model directory's SHA256SUMS), renamed into place only when complete and verified.
 * Progress goes to a sink the CLI draws as a bar on stderr.
 */
import { createHash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { ModelFile, ModelManifest } from "./model-files";

export class OfflineError extends Error {}
export class DownloadError extends Error {}
export class ChecksumError extends Error {}

export interface ProgressSink {
  start(label: string, total: number | null, already: number): void;
  advance(bytes: number): void;
  done(): void;
}

export interface PullOptions {
  modelsDir: string;
  fetch?: typeof fetch;
  /** Extra request headers (e.g. Authorization for gated repositories); never logged. */
  headers?: Record<string, string>;
  /** Rewrites each file's URL (a mirror, or a local server in tests). */
  rewriteUrl?: (url: string) => string;
  progress?: ProgressSink;
  log?: (line: string) => void;
  /** Attempts per file when the connection drops mid-download (each resumes). */
  attempts?: number;
}

export type Verification = "manifest" | "SHA256SUMS" | "unverified";

export interface PulledFile {
  path: string;
  status: "downloaded" | "present" | "missing-optional";
  sha256?: string;
  verified?: Verification;
}

/** Parses `sha256sum` output: "<hex>  <path>" (or " *<path>"), paths relative to the model dir. */
export function parseSha256Sums(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const m = /^([0-9a-fA-F]{64}) [ *](?:\.\/)?(.+)$/.exec(line.trim());
    if (m) out.set(m[2]!, m[1]!.toLowerCase());
  }
  return out;
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return h.digest("hex");
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

async function request(f: typeof fetch, url: string, headers: Record<string, string>): Promise<Response> {
  try {
    return await f(url, { headers, redirect: "follow" });
  } catch (e) {
    throw new OfflineError(`cannot reach ${hostOf(url)} (${(e as Error).message}). Are you offline? Copy the files in by hand instead (see models/README.md).`);
  }
}

/** Downloads one file into `part`, resuming from its current size; returns when the body ended. */
async function downloadOnce(o: Required<Pick<PullOptions, "fetch">> & PullOptions, file: ModelFile, url: string, part: string): Promise<"done" | "not-found"> {
  const have = existsSync(part) ? statSync(part).size : 0;
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (have > 0) headers.range = `bytes=${have}-`;
  const res = await request(o.fetch, url, headers);
  if (res.status === 404) {
    await res.body?.cancel();
    return "not-found";
  }
  if (res.status === 416 && have > 0) {
    // Nothing left to fetch past our .part: it is complete (the checksum will tell).
    await res.body?.cancel();
    return "done";
  }
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    throw new DownloadError(`${file.path}: access denied (HTTP ${res.status}). If the repository is gated, accept its licence on the website and set HF_TOKEN.`);
  }
  if (res.status !== 200 && res.status !== 206) {
    await res.body?.cancel();
    throw new DownloadError(`${file.path}: HTTP ${res.status} from ${hostOf(url)}`);
  }
  let offset = 0;
  if (res.status === 206) {
    const m = /bytes (\d+)-/.exec(res.headers.get("content-range") ?? "");
    offset = m ? Number(m[1]) : have;
    if (offset !== have) {
      await res.body?.cancel();
      rmSync(part, { force: true });
      throw new DownloadError(`${file.path}: server resumed at byte ${offset}, expected ${have}; restarting`);
    }
  }
  const length = Number(res.headers.get("content-length") ?? NaN);
  const total = Number.isFinite(length) ? offset + length : file.bytes;
  // A file of known size is never read past it: a body that does not end cannot fill the disk.
  const tooLong = () => new ChecksumError(`${file.path}: longer than its pinned size of ${file.bytes} bytes; the download was stopped and deleted`);
  if (file.bytes !== null && total !== null && total > file.bytes) {
    await res.body?.cancel();
    rmSync(part, { force: true });
    throw tooLong();
  }
  o.progress?.start(file.path, total, offset);
  const fh = await open(part, offset > 0 ? "a" : "w");
  let size = offset;
  try {
    if (!res.body) throw new DownloadError(`${file.path}: empty response`);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (file.bytes !== null && size > file.bytes) throw tooLong();
      await fh.write(chunk);
      o.progress?.advance(chunk.byteLength);
    }
  } catch (e) {
    if (e instanceof ChecksumError) rmSync(part, { force: true });
    throw e;
  } finally {
    await fh.close();
    o.progress?.done();
  }
  if (total !== null && statSync(part).size < total) throw new DownloadError(`${file.path}: connection closed early`);
  return "done";
}

function expectedHash(file: ModelFile, sums: Map<string, string>): { hash: string; source: Verification } | null {
  if (file.sha256) return { hash: file.sha256.toLowerCase(), source: "manifest" };
  const s = sums.get(file.path);
  return s ? { hash: s, source: "SHA256SUMS" } : null;
}

/** Pulls every file of a manifest; throws OfflineError/DownloadError/ChecksumError on failure. */
export async function pullModel(m: ModelManifest, opts: PullOptions): Promise<PulledFile[]> {
  const o = { fetch: globalThis.fetch, attempts: 4, ...opts };
  const log = o.log ?? (() => {});
  const dir = join(o.modelsDir, m.dir);
  mkdirSync(dir, { recursive: true });
  const sumsPath = join(dir, "SHA256SUMS");
  const sums = existsSync(sumsPath) ? parseSha256Sums(readFileSync(sumsPath, "utf8")) : new Map<string, string>();
  const results: PulledFile[] = [];

  for (const file of m.files) {
    const dest = join(dir, ...file.path.split("/"));
    const part = dest + ".part";
    mkdirSync(dirname(dest), { recursive: true });
    const want = expectedHash(file, sums);

    if (existsSync(dest)) {
      if (!want) {
        results.push({ path: file.path, status: "present", verified: "unverified" });
        log(`${file.path}: present`);
        continue;
      }
      const got = await sha256File(dest);
      if (got === want.hash) {
        results.push({ path: file.path, status: "present", sha256: got, verified: want.source });
        log(`${file.path}: present, checksum ok`);
        continue;
      }
      log(`${file.path}: present but its checksum does not match (${want.source}); downloading again`);
      rmSync(dest);
    }

    const url = o.rewriteUrl ? o.rewriteUrl(file.url) : file.url;
    let outcome: "done" | "not-found" = "done";
    for (let attempt = 1; ; attempt++) {
      try {
        outcome = await downloadOnce(o, file, url, part);
        break;
      } catch (e) {
        // Offline at the first byte is final, and so are bytes that are not the pinned ones; a drop mid-file is retried, resuming.
        if ((e instanceof OfflineError && !existsSync(part)) || e instanceof ChecksumError) throw e;
        if (attempt >= o.attempts) throw e;
        log(`${file.path}: ${(e as Error).message}; retrying (${attempt}/${o.attempts - 1})`);
      }
    }
    if (outcome === "not-found") {
      if (file.optional) {
        results.push({ path: file.path, status: "missing-optional" });
        log(`${file.path}: not in the repository (optional, skipped)`);
        continue;
      }
      throw new DownloadError(`${file.path}: not found (HTTP 404) at ${hostOf(url)}`);
    }
    const got = await sha256File(part);
    if (want && got !== want.hash) {
      rmSync(part, { force: true });
      throw new ChecksumError(`${file.path}: checksum mismatch (expected ${want.hash} from ${want.source}, got ${got}); the partial file was deleted, run the pull again`);
    }
    renameSync(part, dest);
    results.push({ path: file.path, status: "downloaded", sha256: got, verified: want ? want.source : "unverified" });
    log(`${file.path}: downloaded, sha256 ${got}${want ? " (verified)" : " (not verified: no checksum pinned)"}`);
  }

  // Trust on first use: record what was fetched so later pulls verify against it.
  if (!existsSync(sumsPath)) {
    const lines = results.filter((r) => r.sha256).map((r) => `${r.sha256}  ${r.path}`);
    if (lines.length) writeFileSync(sumsPath, lines.join("\n") + "\n");
  }
  return results;
}
