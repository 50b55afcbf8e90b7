/**
 * Runs the real server as a child process (`bun src/main.ts serve`), so a test can SIGKILL it
 * mid-flight and start it again on the same data directory. The address comes from its
 * "listening" log line (PORT=0 picks a free port).
 */
import type { Subprocess } from "bun";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

export interface ServerProcess {
  base: string;
  proc: Subprocess<"ignore", "ignore", "pipe">;
  /** Every stderr log line so far, parsed. */
  logs: Record<string, unknown>[];
  exited: Promise<number>;
}

export async function spawnServer(env: Record<string, string>, timeoutMs = 15_000): Promise<ServerProcess> {
  const proc = Bun.spawn([BUN, "src/main.ts", "serve"], {
    cwd: ROOT,
    // A grace period of 0 unless the test sets one: a test's clean-up SIGTERM cuts what is still
    // open (its stalled clients, say) instead of waiting the default 30 s for it.
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", PORT: "0", HOST: "127.0.0.1", SWITCHYARD_LOG_LEVEL: "info", SWITCHYARD_SHUTDOWN_GRACE_SECONDS: "0", SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS: "0", ...env },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const logs: Record<string, unknown>[] = [];
  let resolveBase!: (url: string) => void;
  const listening = new Promise<string>((r) => (resolveBase = r));
  (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stderr) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const obj = JSON.parse(line) as Record<string, unknown>;
          logs.push(obj);
          if (obj.msg === "listening") resolveBase(String(obj.url));
        } catch {
          logs.push({ raw: line });
        }
      }
    }
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`server did not start: ${JSON.stringify(logs)}`)), timeoutMs);
    proc.exited.then((c) => reject(new Error(`server exited with ${c}: ${JSON.stringify(logs)}`)));
  });
  failed.catch(() => {});
  try {
    const base = await Promise.race([listening, failed]);
    return { base, proc, logs, exited: proc.exited };
  } catch (err) {
    proc.kill("SIGKILL"); // a server that did not come up must not outlive the test
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
