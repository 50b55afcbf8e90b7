/**
 * The floor for the hot-path benchmark: a bare Bun.serve proxy doing the same fetch and JSON
 * rewrite as the gateway, and nothing else (no auth, limits, billing, metrics or log). Run as its
 * own process; forwards POST <path> to BARE_PROXY_UPSTREAM (an origin) + <path>.
 *
 *   plain:    parse the body, set model, drop service_tier, fetch, parse the reply, set id and
 *             model, drop system_fingerprint, send it as JSON;
 *   streamed: the same request (plus stream_options.include_usage), then every SSE data line
 *             parsed, rewritten (id, model) and re-encoded as it arrives; with
 *             BARE_PROXY_STREAM=pipe the upstream's bytes are passed on untouched instead.
 *
 * Prints `{"url": "http://127.0.0.1:<port>"}` on stdout once listening.
 */
import { serveUntilKilled } from "../../support/serve-until-killed";

const upstream = process.env.BARE_PROXY_UPSTREAM;
if (!upstream) throw new Error("BARE_PROXY_UPSTREAM is not set");

const pipe = process.env.BARE_PROXY_STREAM === "pipe";
const enc = new TextEncoder();
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
let seq = 0;

type Json = Record<string, unknown>;

function rewriteStream(body: ReadableStream<Uint8Array>, id: string, model: string): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buffer = "";
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      for (;;) {
        const r = await reader.read();
        if (r.done) {
          c.close();
          return;
        }
        buffer += dec.decode(r.value, { stream: true });
        let out = "";
        let nl: number;
        while ((nl = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 2);
          if (!event.startsWith("data: ")) continue;
          const data = event.slice(6);
          if (data === "[DONE]") {
            out += "data: [DONE]\n\n";
            continue;
          }
          const obj = JSON.parse(data) as Json;
          obj.id = id;
          obj.model = model;
          delete obj.system_fingerprint;
          out += `data: ${JSON.stringify(obj)}\n\n`;
        }
        if (out) {
          c.enqueue(enc.encode(out));
          return;
        }
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  async fetch(req) {
    const url = req.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const body = (await req.json()) as Json;
    const model = String(body.model);
    const stream = body.stream === true;
    delete body.service_tier;
    if (stream) body.stream_options = { include_usage: true };
    const res = await fetch(upstream + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const id = `chatcmpl-${++seq}`;
    if (!stream) {
      const reply = (await res.json()) as Json;
      reply.id = id;
      reply.model = model;
      delete reply.system_fingerprint;
      return Response.json(reply, { status: res.status });
    }
    return new Response(pipe ? res.body : rewriteStream(res.body!, id, model), { status: res.status, headers: SSE_HEADERS });
  },
});

serveUntilKilled(`http://127.0.0.1:${server.port}`, () => server.stop(true));

