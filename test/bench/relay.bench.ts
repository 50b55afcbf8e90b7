/**
 * Streaming relay benchmark: chunks per second through the gateway vs straight from the upstream,
 * and the time-to-first-token the gateway adds. The upstream is a loopback server that streams
 * pre-encoded chunks as fast as the client reads them, so the figures show the relay's own cost
 * (parse, rewrite, re-encode, billing) on this machine.
 *
 *   ./node_modules/.bin/bun test/bench/relay.bench.ts [chunksPerStream=2000] [ttftSamples=200] [concurrency=8]
 */
import { startHarness } from "../support/harness";

const CHUNKS = Number(process.argv[2] ?? 2000);
const TTFT_SAMPLES = Number(process.argv[3] ?? 200);
const CONCURRENCY = Number(process.argv[4] ?? 8);
const MODEL = "glm-4.6";

const enc = new TextEncoder();
const frame = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);

const upstream = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  async fetch(req) {
    const body = (await req.json()) as { model: string; max_tokens?: number };
    const n = body.max_tokens ?? CHUNKS;
    const base = { id: "chatcmpl-up", object: "chat.completion.chunk", created: 1_700_000_000, model: body.model };
    const word = frame({ ...base, choices: [{ index: 0, delta: { content: " tok" }, finish_reason: null }] });
    let i = 0;
    return new Response(
      new ReadableStream<Uint8Array>({
        pull(c) {
          if (i === 0) c.enqueue(frame({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] }));
          // Several frames per pull, as a busy engine's socket would deliver them.
          for (let k = 0; k < 16 && i < n; k++, i++) c.enqueue(word);
          if (i >= n) {
            c.enqueue(frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
            c.enqueue(frame({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: n, total_tokens: n + 10 } }));
            c.enqueue(enc.encode("data: [DONE]\n\n"));
            c.close();
          }
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  },
});
const upstreamUrl = `http://127.0.0.1:${upstream.port}/v1`;
const h = await startHarness({ SWITCHYARD_UPSTREAM_URL: upstreamUrl, SWITCHYARD_RATE_LIMIT_RPM: "10000000", SWITCHYARD_CONCURRENCY_LIMIT: "100000" });
const acct = await h.account(1_000_000);

type Target = { name: string; url: string; headers: Record<string, string> };
const direct: Target = { name: "direct", url: `${upstreamUrl}/chat/completions`, headers: {} };
const gateway: Target = { name: "gateway", url: `${h.base}/v1/chat/completions`, headers: { authorization: `Bearer ${acct.key}` } };

/** One streamed request: counts content chunks, returns ms to the first content byte and in all. */
async function run(t: Target, maxTokens: number): Promise<{ chunks: number; ttftMs: number; totalMs: number }> {
  const t0 = performance.now();
  const res = await fetch(t.url, {
    method: "POST",
    headers: { "content-type": "application/json", ...t.headers },
    body: JSON.stringify({ model: MODEL, stream: true, max_tokens: maxTokens, messages: [{ role: "user", content: "bench" }] }),
  });
  if (!res.ok) throw new Error(`${t.name}: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let ttft = -1;
  let chunks = 0;
  let tail = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (ttft < 0) ttft = performance.now() - t0;
    const text = tail + dec.decode(value, { stream: true });
    const parts = text.split("\n\n");
    tail = parts.pop()!;
    for (const p of parts) if (p.includes('"content":" tok"')) chunks++;
  }
  return { chunks, ttftMs: ttft, totalMs: performance.now() - t0 };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function throughput(t: Target, concurrency: number): Promise<number> {
  await run(t, CHUNKS); // warm-up
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: concurrency }, () => run(t, CHUNKS)));
  const seconds = (performance.now() - t0) / 1000;
  const total = results.reduce((n, r) => n + r.chunks, 0);
  if (total !== concurrency * CHUNKS) throw new Error(`${t.name}: got ${total} chunks, expected ${concurrency * CHUNKS}`);
  return total / seconds;
}

async function ttft(t: Target): Promise<number[]> {
  for (let i = 0; i < 10; i++) await run(t, 4);
  const xs: number[] = [];
  for (let i = 0; i < TTFT_SAMPLES; i++) xs.push((await run(t, 4)).ttftMs);
  return xs;
}

const rows: string[] = [];
for (const c of [1, CONCURRENCY]) {
  const d = await throughput(direct, c);
  const g = await throughput(gateway, c);
  rows.push(`throughput, ${c} stream(s) x ${CHUNKS} chunks: direct ${Math.round(d).toLocaleString("en")} chunks/s, gateway ${Math.round(g).toLocaleString("en")} chunks/s (${((g / d) * 100).toFixed(0)}% of direct)`);
}
const td = await ttft(direct);
const tg = await ttft(gateway);
rows.push(
  `time to first byte over ${TTFT_SAMPLES} sequential requests: direct p50 ${pct(td, 50).toFixed(2)} ms / p99 ${pct(td, 99).toFixed(2)} ms; ` +
    `gateway p50 ${pct(tg, 50).toFixed(2)} ms / p99 ${pct(tg, 99).toFixed(2)} ms; added p50 ${(pct(tg, 50) - pct(td, 50)).toFixed(2)} ms`,
);
console.log(`relay benchmark (Bun ${Bun.version}, loopback upstream)`);
for (const r of rows) console.log("  " + r);

await h.stop();
upstream.stop(true);
