/**
 * The upstream transport, measured bare: a relay that opens each request to a loopback upstream
 * through the transport and hands the body on with backpressure, nothing else. Figures per
 * transport, in one run: CPU µs per small non-streamed request (4,000 at concurrency 16), req/s,
 * and the relay's RSS growth with 40 clients that stop reading 14 MB streams of long words (no
 * output cap ends them), settled and at its peak over 10 s.
 *
 *   npx bun test/bench/transport.bench.ts                      # our HTTP/1.1 client (src/upstream/http1/)
 *   UNDICI_PATH=/tmp/u/node_modules/undici npx bun test/bench/transport.bench.ts   # and the undici package beside it
 *
 * undici is not a dependency (docs/upstream-client.md says why); to compare, `npm install undici`
 * in a scratch folder and name its folder: in Bun a bare `import "undici"` gets Bun's stand-in,
 * so the real package is imported by its path.
 */
import { request1, targetOf } from "../../src/upstream/http1/client";

const [mode, ...args] = process.argv.slice(2);
const STREAM_BYTES = 14 * 1024 * 1024;
const STALLED = 40;

if (mode === "upstream") serveUpstream();
else if (mode === "relay") await serveRelay(args[0]!, Number(args[1]));
else await compare();

function serveUpstream(): void {
  const frame = new TextEncoder().encode(`data: {"choices":[{"index":0,"delta":{"content":" ${"x".repeat(400)}"}}]}\n\n`);
  const small = JSON.stringify({ id: "c", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] });
  const server = Bun.serve({
    port: 0, hostname: "127.0.0.1", idleTimeout: 0,
    async fetch(req) {
      await req.text();
      if (new URL(req.url).pathname.endsWith("/small")) return new Response(small, { headers: { "content-type": "application/json" } });
      let sent = 0;
      const body = new ReadableStream({
        type: "bytes",
        pull(c) {
          for (let k = 0; k < 8 && sent < STREAM_BYTES; k++, sent += frame.byteLength) c.enqueue(frame.slice());
          if (sent >= STREAM_BYTES) c.close();
        },
      }, { highWaterMark: 0 });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log(server.port);
}

type Pull = { next(): Promise<Uint8Array | null>; cancel(): void };

async function serveRelay(transport: string, upstreamPort: number): Promise<void> {
  const base = `http://127.0.0.1:${upstreamPort}/v1`;
  const target = targetOf(base);
  const undici = transport === "undici" ? await import(`${process.env.UNDICI_PATH}/index.js`) : null;
  const agent = undici ? new undici.Agent({ connections: 256 }) : null;
  const open = async (path: string): Promise<Pull> => {
    if (undici) {
      const r = await undici.request(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", dispatcher: agent });
      const it = r.body[Symbol.asyncIterator]();
      return { next: async () => { const x = await it.next(); return x.done ? null : new Uint8Array(x.value); }, cancel: () => r.body.destroy() };
    }
    const r = await request1({ target, method: "POST", path, headers: { "content-type": "application/json" }, body: "{}", signal: new AbortController().signal, connectTimeoutMs: 5000 });
    return { next: async () => { const x = await r.body.read(); return x.done ? null : x.value; }, cancel: () => void r.body.cancel() };
  };
  const server = Bun.serve({
    port: 0, hostname: "127.0.0.1", idleTimeout: 0,
    async fetch(req) {
      const small = new URL(req.url).pathname === "/small";
      const up = await open(small ? "/small" : "/stream");
      if (small) {
        const parts: Uint8Array[] = [];
        for (let c; (c = await up.next()); ) parts.push(c);
        return new Response(Buffer.concat(parts), { headers: { "content-type": "application/json" } });
      }
      const body = new ReadableStream({
        type: "bytes",
        async pull(c) {
          const x = await up.next();
          if (x === null) c.close();
          else c.enqueue(x as Uint8Array<ArrayBuffer>);
        },
        cancel: () => up.cancel(),
      }, { highWaterMark: 0 });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log(server.port);
  // One line in on stdin, one line of figures out.
  for await (const _ of console) {
    Bun.gc(true);
    const cpu = process.cpuUsage();
    console.log(JSON.stringify({ rss: process.memoryUsage().rss, cpuUs: cpu.user + cpu.system }));
  }
}

function lines(stream: ReadableStream<Uint8Array>): () => Promise<string> {
  const reader = stream.getReader();
  let buf = "";
  return async () => {
    while (!buf.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error("child ended");
      buf += new TextDecoder().decode(value);
    }
    const i = buf.indexOf("\n");
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    return line;
  };
}

async function compare(): Promise<void> {
  const self = import.meta.path;
  const upstream = Bun.spawn([process.execPath, self, "upstream"], { stdout: "pipe" });
  const upstreamPort = await lines(upstream.stdout)();
  const transports = ["ours", ...(process.env.UNDICI_PATH ? ["undici"] : [])];
  const rows: Record<string, string>[] = [];
  for (const transport of transports) {
    const relay = Bun.spawn([process.execPath, self, "relay", transport, upstreamPort], { stdout: "pipe", stdin: "pipe" });
    const line = lines(relay.stdout);
    const port = Number(await line());
    const stats = async () => {
      relay.stdin.write("stats\n");
      relay.stdin.flush();
      return JSON.parse(await line()) as { rss: number; cpuUs: number };
    };
    const small = async () => void (await (await fetch(`http://127.0.0.1:${port}/small`, { method: "POST", body: "{}" })).text());
    for (let i = 0; i < 500; i++) await small();
    const before = await stats();
    const N = 4000;
    let next = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 16 }, async () => { while (next++ < N) await small(); }));
    const seconds = (performance.now() - t0) / 1000;
    const after = await stats();
    const sockets = await Promise.all(Array.from({ length: STALLED }, () => Bun.connect({
      hostname: "127.0.0.1", port,
      socket: { open: (s) => void s.write("POST /stream HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"), data() {} },
    })));
    for (const s of sockets) s.pause();
    let peak = 0;
    for (let t = 0; t < 10; t++) {
      await Bun.sleep(1000);
      peak = Math.max(peak, (await stats()).rss);
    }
    const settled = await stats();
    rows.push({
      transport,
      "CPU µs/request": ((after.cpuUs - before.cpuUs) / N).toFixed(1),
      "req/s": (N / seconds).toFixed(0),
      [`${STALLED} stalled: RSS settled`]: `+${((settled.rss - after.rss) / 1e6).toFixed(1)} MB`,
      "peak": `+${((peak - after.rss) / 1e6).toFixed(1)} MB`,
    });
    for (const s of sockets) s.terminate();
    relay.kill();
    await relay.exited;
  }
  upstream.kill();
  console.table(rows);
}
