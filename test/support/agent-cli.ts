/**
 * Runs a real agent CLI (Claude Code, Codex) hermetically: a fresh HOME and config directory,
 * telemetry, update checks and other non-essential traffic off, every non-loopback connection
 * sent to a dead proxy (so nothing leaves the machine even if a switch is missed), and a hard
 * time limit. Only PATH (for the shell its tools run) comes from the test's environment.
 */
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const BIN = resolve(import.meta.dir, "../../node_modules/.bin");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface Sandbox {
  /** The fake home directory (config dirs live under it). */
  home: string;
  /** The working directory the agent runs in. */
  work: string;
  dispose(): void;
}

export function makeSandbox(): Sandbox {
  const root = mkdtempSync(join(tmpdir(), "switchyard-agent-"));
  const home = join(root, "home");
  const work = join(root, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });
  return { home, work, dispose: () => rmSync(root, { recursive: true, force: true }) };
}

/** Environment shared by both CLIs: nothing from the developer's own setup leaks in. */
export function hermeticEnv(home: string, extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    USER: "switchyard-test",
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local/share"),
    TMPDIR: tmpdir(),
    // Anything not on loopback goes to a closed port and fails at once.
    HTTP_PROXY: "http://127.0.0.1:9",
    HTTPS_PROXY: "http://127.0.0.1:9",
    ALL_PROXY: "http://127.0.0.1:9",
    http_proxy: "http://127.0.0.1:9",
    https_proxy: "http://127.0.0.1:9",
    NO_PROXY: "127.0.0.1,localhost",
    no_proxy: "127.0.0.1,localhost",
    ...extra,
  };
}

export async function runCli(cmd: string[], o: { env: Record<string, string>; cwd: string; timeoutMs: number }): Promise<CliRun> {
  const proc = Bun.spawn(cmd, { cwd: o.cwd, env: o.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, o.timeoutMs);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, stdout, stderr, timedOut };
}
