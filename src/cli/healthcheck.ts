/**
 * `switchyard healthcheck`: asks the server this configuration describes (HOST, PORT) for
 * /healthz, so a container image needs no curl for its HEALTHCHECK. Exit 0 when it answers 200,
 * 1 otherwise (one line on stderr says why). Opens no store.
 */
import type { Config } from "../config";

export const HEALTHCHECK_TIMEOUT_MS = 3_000;

export async function runHealthcheck(config: Config, timeoutMs = HEALTHCHECK_TIMEOUT_MS): Promise<number> {
  // Bound to every interface: ask over loopback.
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host === "::" ? "[::1]" : config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${config.port}/healthz`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel().catch(() => {});
    if (res.status === 200) return 0;
    process.stderr.write(`switchyard: healthcheck: ${url} answered ${res.status}\n`);
  } catch (e) {
    const why = (e as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (e as Error).message.split("\n")[0];
    process.stderr.write(`switchyard: healthcheck: ${url}: ${why}\n`);
  }
  return 1;
}
