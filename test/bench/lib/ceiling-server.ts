/**
 * The servers the ceiling benchmark measures, each in its own process with its own data folder:
 * this checkout from source (or a built binary, BENCH_BIN), and optionally a baseline checkout
 * (BENCH_BASELINE) measured in the same rounds. Also the benchmark's child processes
 * (ceiling-child.ts), started as this same script with `--child`, so a bundled copy of the
 * benchmark (test/gpu-check) has them too.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { BENCH_ADMIN_TOKEN, benchAccount, freePort } from "./processes";

export interface ServerSpec {
  label: string;
  /** A checkout to run from source, or a built binary. */
  root?: string;
  bin?: string;
}

export interface Server {
  label: string;
  url: string;
  pid: number;
  key: string;
  stop(): Promise<void>;
}

/** Starts `spec` on `modelsDir` and waits until `model` is listed (weights loaded), up to 10 minutes. */
export async function startServer(spec: ServerSpec, modelsDir: string, model: string, env: Record<string, string> = {}): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), "switchyard-ceiling-"));
  const port = freePort();
  const { BUN_BE_BUN: _, ...inherited } = process.env;
  const cmd = spec.bin ? [spec.bin] : [process.execPath, join(spec.root!, "src/main.ts"), "serve"];
  const proc: Subprocess = Bun.spawn(cmd, {
    cwd: dataDir,
    env: {
      ...inherited,
      PORT: String(port),
      HOST: "127.0.0.1",
      SWITCHYARD_DATA_DIR: join(dataDir, "data"),
      SWITCHYARD_MODELS_DIR: modelsDir,
      SWITCHYARD_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      SWITCHYARD_LOG_LEVEL: "warn",
      SWITCHYARD_RATE_LIMIT_RPM: "10000000",
      SWITCHYARD_CONCURRENCY_LIMIT: "100000",
      ...env,
    },
    stdout: "ignore",
    stderr: Bun.file(join(dataDir, "server.log")),
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 600_000;
  try {
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`${spec.label} exited with ${proc.exitCode}: ${(await Bun.file(join(dataDir, "server.log")).text()).slice(-2000)}`);
      const listed = await fetch(url + "/v1/models").then((r) => r.text(), () => "");
      if (listed.includes(`"${model}"`)) break;
      if (Date.now() > deadline) throw new Error(`${spec.label}: ${model} did not load within 10 minutes: ${(await Bun.file(join(dataDir, "server.log")).text()).slice(-2000)}`);
      await Bun.sleep(200);
    }
    const { key } = await benchAccount(url, "1000000");
    return { label: spec.label, url, pid: proc.pid, key, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Runs this benchmark as a child in `mode` with `arg` (passed in a file), and parses its answer. */
export async function runChildProcess(script: string, mode: string, arg: unknown): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-ceiling-job-"));
  try {
    const file = join(dir, "job.json");
    writeFileSync(file, JSON.stringify(arg));
    const p = Bun.spawn([process.execPath, script, "--child", mode, file], { stdout: "pipe", stderr: "pipe", env: process.env });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    const line = out.trim().split("\n").at(-1) ?? "";
    if (code !== 0 || !line.startsWith("{")) throw new Error(`child ${mode} failed (exit ${code}): ${err.slice(-1000)}${out.slice(-500)}`);
    return JSON.parse(line);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
