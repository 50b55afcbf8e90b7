/**
 * For a server run as its own process (fake upstreams, the bare proxy): prints `{"url": ...}` as
 * the first stdout line — what the parent waits for (bench/lib/processes.ts) — and stops cleanly
 * on SIGTERM or SIGINT.
 */
export function serveUntilKilled(url: string, stop: () => void): void {
  process.stdout.write(JSON.stringify({ url }) + "\n");
  const exit = () => {
    stop();
    process.exit(0);
  };
  process.on("SIGTERM", exit);
  process.on("SIGINT", exit);
}
