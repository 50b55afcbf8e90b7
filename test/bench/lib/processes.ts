/**
 * Benchmark processes: the fake upstream and the gateway each run in their own Bun process, so
 * neither shares an event loop with the other or with the load generator.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import type { Behaviour } from "../../support/fake-upstream";

export const ROOT = resolve(import.meta.dir, "../../..");
export const BUN = process.execPath;
export const BENCH_ADMIN_TOKEN = "bench-admin-token-0123456789";

export interface Proc {
  url: string;
  proc: Subprocess;
  stop(): Promise<void>;
}

/** Reads lines from a stream until `match` returns a value (or the process dies). */
async function waitForLine<T>(stream: ReadableStream<Uint8Array>, match: (line: string) => T | null, what: string): Promise<T> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`${what} exited before it was ready:\n${buffer}`);
    buffer += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const hit = match(line);
      if (hit !== null) {
        reader.releaseLock();
        return hit;
      }
    }
  }
}

function stopper(proc: Subprocess, cleanup = () => {}) {
  return async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    cleanup();
  };
}

export async function startUpstreamProcess(behaviour: Behaviour = {}): Promise<Proc> {
  const proc = Bun.spawn([BUN, join(ROOT, "test/support/fake-upstream-process.ts")], {
    env: { ...process.env, FAKE_UPSTREAM_BEHAVIOUR: JSON.stringify(behaviour) },
    stdout: "pipe",
    stderr: "inherit",
  });
  const url = await waitForLine(proc.stdout as ReadableStream<Uint8Array>, (l) => (l.startsWith("{") ? (JSON.parse(l).url as string) : null), "fake upstream");
  return { url, proc, stop: stopper(proc) };
}

/**
 * Runs a benchmark script (a file that prints `{"url": ...}` as its first stdout line and serves
 * until SIGTERM) in its own process: the fast upstream and the bare proxy.
 */
export async function startScriptProcess(file: string, env: Record<string, string> = {}): Promise<Proc> {
  const proc = Bun.spawn([BUN, file], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "inherit" });
  const url = await waitForLine(proc.stdout as ReadableStream<Uint8Array>, (l) => (l.startsWith("{") ? (JSON.parse(l).url as string) : null), file);
  return { url, proc, stop: stopper(proc) };
}

/** A loopback port that was free a moment ago. */
export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/**
 * Starts `switchyard serve` from source with a fresh data directory; resolves once it answers.
 * With `logFile`, its stderr (the JSON log lines) goes to that file instead of this terminal.
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  options: { logFile?: (dataDir: string) => string; args?: string[]; /** Another checkout to run (a baseline). */ root?: string } = {},
): Promise<Proc & { dataDir: string }> {
  const root = options.root ?? ROOT;
  const dataDir = mkdtempSync(join(tmpdir(), "switchyard-bench-"));
  const port = freePort();
  const proc = Bun.spawn([BUN, ...(options.args ?? []), join(root, "src/main.ts"), "serve"], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      SWITCHYARD_DATA_DIR: dataDir,
      SWITCHYARD_MODELS_DIR: join(dataDir, "models"),
      SWITCHYARD_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      SWITCHYARD_LOG_LEVEL: "warn",
      ...env,
    },
    stdout: "inherit",
    stderr: options.logFile ? Bun.file(options.logFile(dataDir)) : "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) {
      const log = options.logFile ? await Bun.file(options.logFile(dataDir)).text().catch(() => "") : "";
      throw new Error(`gateway exited with ${proc.exitCode} before it was ready${log ? `:\n${log}` : ""}`);
    }
    try {
      if ((await fetch(url + "/")).ok) break;
    } catch {}
    if (Date.now() > deadline) {
      proc.kill();
      throw new Error("gateway did not answer within 30 s");
    }
    await Bun.sleep(50);
  }
  return { url, proc, dataDir, stop: stopper(proc, () => rmSync(dataDir, { recursive: true, force: true })) };
}

/** Creates an account with `credits` USD and a key through the gateway's admin API. */
export async function benchAccount(gatewayUrl: string, credits: string): Promise<{ id: string; key: string }> {
  const headers = { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, "content-type": "application/json" };
  const a = (await (await fetch(`${gatewayUrl}/admin/accounts`, { method: "POST", headers, body: JSON.stringify({ name: "bench", credits }) })).json()) as { id: string };
  const k = (await (await fetch(`${gatewayUrl}/admin/accounts/${a.id}/keys`, { method: "POST", headers, body: "{}" })).json()) as { key: string };
  return { id: a.id, key: k.key };
}
