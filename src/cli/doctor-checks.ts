/**
 * The parts of `switchyard doctor` that need the configuration: the data and models directories
 * (present, writable, free space), each upstream's reachability (GET <base>/models with a short
 * timeout; the operator's own CLI names hosts, never keys) and the configured ONNX provider.
 * Read-only: nothing is created, so a directory that does not exist yet is judged by the nearest
 * parent that does.
 */
import { accessSync, constants, existsSync, statfsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { Config } from "../config";
import { createRouteRegistry, type Upstream } from "../upstream/registry";
import { targetFor } from "../upstream/client";
import { request1 } from "../upstream/http1/client";

export type Check = { ok: boolean; [k: string]: unknown };

/** How long one upstream may take to answer GET /models. */
export const UPSTREAM_PROBE_MS = 3_000;

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function nearestExisting(path: string): string {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

/**
 * A directory the server writes (data) or reads (models). `required`: a missing one fails the
 * check unless it could be created; otherwise missing is fine (no local models).
 */
export function checkDirectory(path: string, mustWrite: boolean): Check {
  const exists = existsSync(path);
  if (exists && !statSync(path).isDirectory()) return { ok: false, path, error: "exists but is not a directory" };
  const base = exists ? path : nearestExisting(path);
  let freeBytes: number | null = null;
  try {
    const fs = statfsSync(base);
    freeBytes = fs.bavail * fs.bsize;
  } catch {
    // no statfs for this path: reported as unknown
  }
  const canWrite = writable(base);
  const report: Check = { ok: true, path, exists, writable: canWrite, free_bytes: freeBytes };
  if (mustWrite && !canWrite) return { ...report, ok: false, error: exists ? "not writable" : `does not exist and ${base} is not writable` };
  if (mustWrite && freeBytes !== null && freeBytes < 64 * 1024 * 1024) return { ...report, ok: false, error: "less than 64 MiB free" };
  return report;
}

/**
 * GET <base_url>/models as the server would send it: the route's key, forward proxy and TLS
 * material, through the upstream client (upstream/http1/).
 */
async function probe(u: Upstream, timeoutMs: number): Promise<Check> {
  const url = `${u.baseUrl}/models`;
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const res = await request1({
      target: targetFor(u), method: "GET", path: "/models", body: "", signal: deadline, connectTimeoutMs: timeoutMs, keepAlive: false,
      headers: { accept: "application/json", ...(u.apiKey ? { authorization: `Bearer ${u.apiKey}` } : {}) },
    });
    await res.body.cancel().catch(() => {});
    const report = { name: u.name, url, reachable: true, status: res.status };
    if (res.status === 401 || res.status === 403) return { ...report, ok: false, error: "the upstream refused the key" };
    return res.status >= 200 && res.status < 300 ? { ...report, ok: true } : { ...report, ok: false, error: `answered ${res.status}` };
  } catch (e) {
    return { name: u.name, url, ok: false, reachable: false, error: deadline.aborted ? `no answer within ${timeoutMs} ms` : (e as Error).message.split("\n")[0]! };
  }
}

/** Every configured upstream, probed side by side; an empty list when none is configured. */
export async function checkUpstreams(config: Config, timeoutMs = UPSTREAM_PROBE_MS): Promise<Check[]> {
  let upstreams: Upstream[];
  try {
    // The server's own view of the upstreams: SWITCHYARD_UPSTREAM_URL and SWITCHYARD_ROUTES, keys trimmed and checked.
    upstreams = (await createRouteRegistry(config)).upstreams();
  } catch (e) {
    return [{ ok: false, name: "routes", error: (e as Error).message }];
  }
  return Promise.all(upstreams.map((u) => probe(u, timeoutMs)));
}

