/**
 * The command line as a real subprocess (`bun src/main.ts …`) for the CLI test files
 * (test/cli.test.ts, test/cli-operations.test.ts). useCliDataDir() makes a temporary data
 * directory, removed after the calling file's tests, and returns runners whose child gets it as
 * SWITCHYARD_DATA_DIR in an otherwise bare environment (PATH and HOME only, logging silent).
 */
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "../..");
export const BUN = join(ROOT, "node_modules/.bin/bun");

/** Call at the top level of a test file. */
export function useCliDataDir() {
  const dataDir = mkdtempSync(join(tmpdir(), "switchyard-cli-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  function childEnv(env: Record<string, string>) {
    return { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_LOG_LEVEL: "silent", ...env };
  }

  async function cliAsync(args: string[], env: Record<string, string> = {}) {
    const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), ...args], { cwd: tmpdir(), env: childEnv(env), stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, stdout, stderr };
  }

  function cli(args: string[], env: Record<string, string> = {}) {
    const p = Bun.spawnSync([BUN, join(ROOT, "src/main.ts"), ...args], {
      cwd: tmpdir(), // runs from any directory
      env: childEnv(env),
      stdout: "pipe",
      stderr: "pipe",
    });
    const stdout = p.stdout.toString();
    let json: any = null;
    try {
      json = JSON.parse(stdout);
    } catch {}
    return { code: p.exitCode, stdout, stderr: p.stderr.toString(), json };
  }

  return { dataDir, childEnv, cliAsync, cli };
}
