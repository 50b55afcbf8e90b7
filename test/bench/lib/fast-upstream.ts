/**
 * A fast fake OpenAI-compatible upstream for the hot-path benchmark, run as its own process:
 * every reply is encoded once at start-up, so the upstream spends as little CPU per request as
 * Bun.serve allows and is never what limits the gateway under test.
 *
 *   POST /v1/chat/completions                 answers at once
 *   POST /delay<ms>/v1/chat/completions       answers after <ms> milliseconds (a slow engine)
 *   POST /pace<ms>/v1/chat/completions        streams with <ms> milliseconds between chunks
 *
 * A plain request gets one chat.completion; `"stream":true` gets the role chunk, BENCH_STREAM_CHUNKS
 * (20) content chunks, the finish chunk, a usage chunk and [DONE], each enqueued on its own: back
 * to back (a fast engine; the gateway may read several in one go), or paced (an engine generating
 * tokens: every chunk arrives in its own read). Prints
 * `{"url": "http://127.0.0.1:<port>"}` (an origin, no /v1) on stdout once listening.
 */
import { serveUntilKilled } from "../../support/serve-until-killed";

const STREAM_CHUNKS = Number(process.env.BENCH_STREAM_CHUNKS ?? 20);

const enc = new TextEncoder();
const base = { id: "chatcmpl-upstream-secret", created: 1_700_000_000, model: "upstream-model", system_fingerprint: "fp_upstream" };
const usage = { prompt_tokens: 12, completion_tokens: STREAM_CHUNKS, total_tokens: 12 + STREAM_CHUNKS };

const PLAIN = enc.encode(
  JSON.stringify({
    ...base,
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content: "Hello! This is a short reply from the benchmark upstream." }, logprobs: null, finish_reason: "stop" }],
    usage,
  }),
);
const frame = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  frame({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
const STREAM_FRAMES: Uint8Array[] = [
  chunk({ role: "assistant", content: "" }),
  ...Array.from({ length: STREAM_CHUNKS }, (_, i) => chunk({ content: i === 0 ? "Hello" : " tok" })),
  chunk({}, "stop"),
];
const USAGE_FRAME = frame({ ...base, object: "chat.completion.chunk", choices: [], usage });
const DONE = enc.encode("data: [DONE]\n\n");

const JSON_HEADERS = { "content-type": "application/json" };
const SSE_HEADERS = { "content-type": "text/event-stream" };
function streamBody(includeUsage: boolean, gapMs: number): ReadableStream<Uint8Array> {
  const frames = includeUsage ? [...STREAM_FRAMES, USAGE_FRAME, DONE] : [...STREAM_FRAMES, DONE];
  if (gapMs === 0) {
    return new ReadableStream<Uint8Array>({
      start(c) {
        for (const f of frames) c.enqueue(f);
        c.close();
      },
    });
  }
  let i = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i > 0) await Bun.sleep(gapMs);
      c.enqueue(frames[i++]!);
      if (i === frames.length) c.close();
    },
  });
}

/** "/delay50/pace1/v1/chat/completions" → { delay: 50, pace: 1 }. */
function optionsOf(path: string): { delay: number; pace: number } {
  const o = { delay: 0, pace: 0 };
  for (const seg of path.slice(1, path.indexOf("/v1/")).split("/")) {
    const m = /^(delay|pace)(\d+)$/.exec(seg);
    if (m) o[m[1] as "delay" | "pace"] = Number(m[2]);
  }
  return o;
}

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    if (!path.endsWith("/v1/chat/completions")) return new Response("not found", { status: 404 });
    const text = await req.text();
    const stream = text.includes('"stream":true');
    const { delay, pace } = optionsOf(path);
    if (delay > 0) await Bun.sleep(delay);
    if (!stream) return new Response(PLAIN, { headers: JSON_HEADERS });
    return new Response(streamBody(text.includes('"include_usage":true'), pace), { headers: SSE_HEADERS });
  },
});

serveUntilKilled(`http://127.0.0.1:${server.port}`, () => server.stop(true));

