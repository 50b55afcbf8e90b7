/**
 * The floor for stream-memory.bench.ts: what a bare Bun proxy costs per concurrent stream, the
 * same streams and clients, measured the same way (peak RSS growth of the proxy process over the
 * number of streams). Two floors (test/bench/lib/bare-proxy.ts): a byte pipe (the upstream's body
 * passed on untouched) and the rewrite every relay must do (each SSE data line parsed, its id and
 * model set, re-encoded). No auth, limits, billing, token counting or garbage-collection pacing.
 *   npx bun test/bench/stream-floor.bench.ts [clients=40] [word chars=1000 | "words"]
 * (STREAM_KB=<n>: each stream's size, default 2048; 156 is what the output cap lets through in
 * stream-memory.bench.ts's capped case.)
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startPullUpstream } from "../support/pull-upstream";
import { startScriptProcess } from "./lib/processes";

const CLIENTS = Number(process.argv[2] ?? 40);
const WORD = process.argv[3] === "words" ? "lorem " : "supercalifragilistic".repeat(Math.ceil(Number(process.argv[3] ?? 1000) / 20));
const upstream = startPullUpstream(Number(process.env.STREAM_KB ?? 2048) * 1024, WORD);
const body = JSON.stringify({ model: "glm-4.6", stream: true, max_tokens: 32_768, messages: [{ role: "user", content: "Write." }] });

try {
  for (const mode of ["pipe", "rewrite"] as const) {
    const proxy = await startScriptProcess(join(import.meta.dir, "lib/bare-proxy.ts"), { BARE_PROXY_UPSTREAM: new URL(upstream.url).origin, BARE_PROXY_STREAM: mode });
    try {
      const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.proc.pid}/status`, "utf8"))![1]) / 1024;
      const reading = async () => (await (await fetch(proxy.url + "/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body })).arrayBuffer()).byteLength;
      await reading(); // warm-up
      await Bun.sleep(500);
      const before = rssMb();
      let peak = before;
      let done = false;
      const all = Promise.all(Array.from({ length: CLIENTS }, reading)).finally(() => (done = true));
      while (!done) {
        peak = Math.max(peak, rssMb());
        await Bun.sleep(20);
      }
      const sizes = await all;
      console.log(`bare proxy, ${mode === "pipe" ? "byte pipe" : "rewrite each event"}: ${CLIENTS} reading clients, ${(sizes[0]! / 1024).toFixed(0)} KB each: RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MB (+${(peak - before).toFixed(0)} MB, ${((peak - before) / CLIENTS).toFixed(2)} MB per stream)`);
    } finally {
      await proxy.stop();
    }
  }
} finally {
  upstream.stop();
}
