/**
 * A hostile upstream floods one request (issues 21.1, 21.2): the gateway's RSS and /healthz latency
 * while the flood arrives, with the default bounds and, with BENCH_BASELINE=/other/checkout, a
 * checkout without them, in one run. The upstream (a raw TCP server in this process) writes as
 * fast as the gateway reads; the gateway runs in its own process. BENCH_MODE picks the flood:
 *   json      a non-streamed reply of BENCH_FLOOD_MB (SWITCHYARD_UPSTREAM_MAX_RESPONSE_BYTES: 502)
 *   sse-line  a stream whose `data: {"…` line never ends (SWITCHYARD_SSE_MAX_LINE_CHARS)
 *   sse-event a stream of `data:` lines with no blank line, so no event ever ends
 *             (SWITCHYARD_SSE_MAX_EVENT_CHARS)
 *
 *   npx bun test/bench/upstream-flood.bench.ts               # BENCH_MODE=json, BENCH_FLOOD_MB=300, BENCH_ROUNDS=3
 */
import type { Socket } from "bun";
import { benchAccount, startGatewayProcess } from "./lib/processes";

const MODE = (process.env.BENCH_MODE ?? "json") as "json" | "sse-line" | "sse-event";
if (!["json", "sse-line", "sse-event"].includes(MODE)) throw new Error(`BENCH_MODE must be json, sse-line or sse-event, got ${MODE}`);
const STREAMED = MODE !== "json";
const MB = Number(process.env.BENCH_FLOOD_MB ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PROBE_EVERY_MS = 25;

/**
 * json: a valid chat completion whose one message is MB megabytes of "a". sse-line: a stream whose
 * first data line opens a JSON string and never ends. sse-event: `data: aaa…` lines, no blank line.
 * Sent as the gateway reads it.
 */
const prefix = Buffer.from(
  MODE === "json" ? '{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"'
  : MODE === "sse-line" ? 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"'
  : "",
);
const suffix = Buffer.from(MODE === "json" ? '"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5}}' : "");
const fill = MB * 1024 * 1024;
const piece = MODE === "sse-event" ? Buffer.from(("data: " + "a".repeat(1016) + "\n").repeat(256)) : Buffer.alloc(256 * 1024, 0x61);

interface Flow { left: number; suffixSent: boolean }
const upstream = Bun.listen<Flow>({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    open(s) {
      s.data = { left: fill, suffixSent: false };
    },
    data(s, d) {
      if (!d.includes("\r\n\r\n")) return;
      s.data = { left: fill, suffixSent: false };
      s.write(STREAMED
        ? "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        : `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${prefix.length + fill + suffix.length}\r\n\r\n`);
      s.write(prefix);
      pump(s);
    },
    drain: (s) => pump(s),
  },
});
function pump(s: Socket<Flow>): void {
  while (s.data.left > 0) {
    const next = piece.subarray(0, Math.min(piece.length, s.data.left));
    const n = s.write(next);
    if (n <= 0) return;
    s.data.left -= n;
    if (n < next.length) return;
  }
  if (!s.data.suffixSent) s.data.suffixSent = s.write(suffix) === suffix.length;
  // A stream ends with its connection (it is close-delimited).
  if (STREAMED && s.data.suffixSent) s.end();
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

async function measure(name: string, root?: string) {
  const gw = await startGatewayProcess({ SWITCHYARD_UPSTREAM_URL: `http://127.0.0.1:${upstream.port}/v1`, SWITCHYARD_LOG_LEVEL: "error" }, { root });
  const acct = await benchAccount(gw.url, "100");
  const pid = gw.proc.pid;
  // Warm: a first /healthz and chat path compile.
  await fetch(gw.url + "/healthz");
  const rows: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const rssBefore = rssMb(pid);
    let peak = rssBefore;
    const healthMs: number[] = [];
    let done = false;
    const started = performance.now();
    const attack = fetch(gw.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${acct.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "glm-4.6", max_tokens: 20, stream: STREAMED, messages: [{ role: "user", content: "hi" }] }),
    }).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    }, (e) => `error ${(e as Error).message}`);
    attack.finally(() => (done = true));
    while (!done) {
      const t0 = performance.now();
      await (await fetch(gw.url + "/healthz")).text();
      healthMs.push(performance.now() - t0);
      peak = Math.max(peak, rssMb(pid));
      await Bun.sleep(PROBE_EVERY_MS);
    }
    const status = await attack;
    const took = performance.now() - started;
    peak = Math.max(peak, rssMb(pid));
    rows.push(
      `| ${name} | ${round + 1} | ${status} | ${(took / 1000).toFixed(2)} | ${rssBefore.toFixed(0)} | ${peak.toFixed(0)} | ${rssMb(pid).toFixed(0)} | ${healthMs.length} | ${pct(healthMs, 50).toFixed(1)} | ${pct(healthMs, 99).toFixed(1)} | ${Math.max(...healthMs).toFixed(1)} |`,
    );
  }
  await gw.stop();
  return rows;
}

const what = { json: "non-streamed reply", "sse-line": "stream line without an end", "sse-event": "stream of data lines without an event end" }[MODE];
console.log(`A ${MB} MB ${what}, ${ROUNDS} rounds per gateway; /healthz probed every ${PROBE_EVERY_MS} ms while it arrives.\n`);
const rows: string[] = [];
if (process.env.BENCH_BASELINE) rows.push(...(await measure("baseline", process.env.BENCH_BASELINE)));
rows.push(...(await measure(MODE === "json" ? "Switchyard (32 MiB limit)" : "Switchyard (1 Mi-character SSE bounds)")));
console.log("| gateway | round | status | s to answer | RSS before MB | RSS peak MB | RSS after MB | /healthz probes | p50 ms | p99 ms | max ms |");
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) console.log(r);
upstream.stop(true);
