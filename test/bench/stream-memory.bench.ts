/**
 * Memory per concurrent stream: the server (a child process, RSS from /proc) relays 40 streams of
 * long words (no spaces: the hardest text to count in parts) with a large max_tokens, to clients
 * that read everything, and to clients that stop reading. Prints RSS before, at peak and settled.
 *   npx bun test/bench/stream-memory.bench.ts [clients=40] [word chars=1000 | "words"]
 * (READ_ROUNDS=<n>: rounds of reading clients, default 2, the later ones on a server that served the load once;
 * STREAM_KB=<n>: the upstream's streams end after n KiB, default 64 MiB, so the cap ends them;
 * N=128 asks for 128 choices, so the cap lies far beyond: e.g. N=128 STREAM_KB=2048 for whole 2 MB streams;
 * every SWITCHYARD_* variable set here is passed to the server (e.g. SWITCHYARD_STREAM_GC_MIB=8), and SERVER_BUN_OPTIONS as its BUN_OPTIONS,
 * e.g. "--preload probe.ts" to sample its heap from inside.)
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnServer } from "../support/server-process";
import { startPullUpstream } from "../support/pull-upstream";

const CLIENTS = Number(process.argv[2] ?? 40);
const WORD = process.argv[3] === "words" ? "lorem " : "supercalifragilistic".repeat(Math.ceil(Number(process.argv[3] ?? 1000) / 20));
const ADMIN = "stream-memory-admin-token-0123456789";
const MB = 1024 * 1024;
/** Rounds of reading clients (READ_ROUNDS, default 2): the first on a server that served one stream, then again. */
const READ_ROUNDS = Number(process.env.READ_ROUNDS ?? 2);

const upstream = startPullUpstream(Number(process.env.STREAM_KB ?? 65536) * 1024, WORD);
const dataDir = mkdtempSync(join(tmpdir(), "switchyard-stream-memory-"));
const server = await spawnServer({
  // Any SWITCHYARD_* setting of this process is the server's too (SWITCHYARD_STREAM_GC_MIB=8, ...).
  ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("SWITCHYARD_") || k.startsWith("BUN_JSC_") || k.startsWith("MIMALLOC_"))) as Record<string, string>),
  SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_ADMIN_TOKEN: ADMIN, SWITCHYARD_UPSTREAM_URL: upstream.url,
  SWITCHYARD_MODELS_DIR: join(dataDir, "models"), SWITCHYARD_CONCURRENCY_LIMIT: "1000",
  ...(process.env.SERVER_BUN_OPTIONS ? { BUN_OPTIONS: process.env.SERVER_BUN_OPTIONS } : {}),
}, 60_000);
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.proc.pid}/status`, "utf8"))![1]) / 1024;
const admin = async (method: string, path: string, body?: unknown) =>
  (await (await fetch(server.base + path, { method, headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) })).json()) as any;
const acct = await admin("POST", "/admin/accounts", { name: "m", credits: 100000 });
const key = (await admin("POST", `/admin/accounts/${acct.id}/keys`, {})).key as string;
const body = JSON.stringify({ model: "glm-4.6", stream: true, max_tokens: 32_768, n: Number(process.env.N ?? 1), messages: [{ role: "user", content: "Write." }] });

async function reading(): Promise<number> {
  const res = await fetch(server.base + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
  return (await res.arrayBuffer()).byteLength;
}
function stalled(): Promise<() => void> {
  const url = new URL(server.base);
  return new Promise((resolve) => {
    const s = connect(Number(url.port), url.hostname);
    s.on("error", () => {});
    s.once("connect", () => s.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
    s.once("data", () => {
      s.pause();
      resolve(() => s.destroy());
    });
  });
}
async function sampled<T>(work: Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = rssMb();
  let done = false;
  const value = work.finally(() => (done = true));
  while (!done) {
    peak = Math.max(peak, rssMb());
    await Bun.sleep(20);
  }
  return { value: await value, peak };
}
const settle = async () => {
  let last = rssMb();
  for (let i = 0; i < 40; i++) {
    await Bun.sleep(250);
    const now = rssMb();
    if (Math.abs(now - last) < 1) break;
    last = now;
  }
  return rssMb();
};

// Warm-up: a stream read to the end, and both token-counting lanes started (each loads the tokenizer).
await reading();
for (const text of ["short", "long ".repeat(10_000)]) {
  await fetch(server.base + "/v1/messages/count_tokens", { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify({ model: "glm-4.6", messages: [{ role: "user", content: text }] }) });
}
const before = await settle();
const startedReading = performance.now();
const r = await sampled(Promise.all(Array.from({ length: CLIENTS }, reading)));
const readingSeconds = (performance.now() - startedReading) / 1000;
const afterReading = await settle();
console.log(`${CLIENTS} reading clients, ${(r.value[0]! / 1024).toFixed(0)} KB each: RSS ${before.toFixed(0)} → peak ${r.peak.toFixed(0)} MB (+${(r.peak - before).toFixed(0)} MB, ${((r.peak - before) / CLIENTS).toFixed(2)} MB per stream), settled ${afterReading.toFixed(0)} MB; relayed in ${readingSeconds.toFixed(2)} s (${((CLIENTS * r.value[0]!) / MB / readingSeconds).toFixed(1)} MB/s)`);
// The same again, on a server that has served that load once (its code compiled, its heap and
// caches grown): what a running server pays per added stream.
for (let round = 2; round <= READ_ROUNDS; round++) {
  const b = await settle();
  const again = await sampled(Promise.all(Array.from({ length: CLIENTS }, reading)));
  console.log(`  again (round ${round}): RSS ${b.toFixed(0)} → peak ${again.peak.toFixed(0)} MB (+${(again.peak - b).toFixed(0)} MB, ${((again.peak - b) / CLIENTS).toFixed(2)} MB per stream)`);
}
const before2 = await settle();
const s = await sampled((async () => {
  const closers = await Promise.all(Array.from({ length: CLIENTS }, stalled));
  await Bun.sleep(3000);
  return closers;
})());
const afterStalled = rssMb();
console.log(`${CLIENTS} stalled clients: RSS ${before2.toFixed(0)} → peak ${s.peak.toFixed(0)} MB (+${(s.peak - before2).toFixed(0)} MB, ${((s.peak - before2) / CLIENTS).toFixed(2)} MB per stream), while stalled ${afterStalled.toFixed(0)} MB`);
for (const c of s.value) c();

server.proc.kill("SIGTERM");
await server.exited;
upstream.stop();
rmSync(dataDir, { recursive: true, force: true });
