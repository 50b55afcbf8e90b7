/**
 * A relay that waits for a slow client pauses its upstream socket; the kernel keeps taking the
 * upstream's bytes meanwhile, and on resuming, one socket read hands over all it holds. With the
 * receive buffer capped (the pool's receiveBufferBytes; runtime/memory.ts, capReceiveBuffer), that
 * is at most about twice the cap, whatever the upstream sent.
 */
import { afterEach, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import { createPool, request1, targetOf } from "./client";

const BODY = 8 * 1024 * 1024;
const PIECE = 64 * 1024;
const listeners: TCPSocketListener<unknown>[] = [];
afterEach(() => {
  for (const l of listeners.splice(0)) l.stop(true);
});

/** A server that writes an 8 MiB body as fast as its socket takes it; `full` resolves once its socket refuses bytes. */
function fastServer() {
  let onFull!: () => void;
  const full = new Promise<void>((r) => (onFull = r));
  const piece = Buffer.alloc(PIECE, "x");
  const pump = (s: Socket<{ sent: number }>) => {
    while (s.data.sent < BODY) {
      const n = s.write(piece, 0, Math.min(PIECE, BODY - s.data.sent));
      s.data.sent += Math.max(0, n);
      if (n < Math.min(PIECE, BODY - s.data.sent + Math.max(0, n))) return onFull();
    }
  };
  const l = Bun.listen<{ sent: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { sent: 0 };
      },
      data(s) {
        if (s.data.sent > 0) return;
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${BODY}\r\n\r\n`);
        pump(s);
      },
      drain: pump,
    },
  });
  listeners.push(l as TCPSocketListener<unknown>);
  return { url: `http://127.0.0.1:${l.port}/v1`, full };
}

async function readSizes(receiveBufferBytes: number): Promise<{ total: number; largest: number }> {
  const server = fastServer();
  const pool = createPool({ maxIdlePerOrigin: 0, maxIdle: 0, receiveBufferBytes });
  const res = await request1({ target: targetOf(server.url), method: "POST", path: "/chat/completions", headers: {}, body: "{}", signal: new AbortController().signal, connectTimeoutMs: 2_000, pool });
  // The body is not read until the server can write no more: the kernel holds all it can.
  await server.full;
  let total = 0;
  let largest = 0;
  for (;;) {
    const r = await res.body.read();
    if (r.done) break;
    total += r.value.byteLength;
    largest = Math.max(largest, r.value.byteLength);
  }
  return { total, largest };
}

test.skipIf(process.platform !== "linux")("with the receive buffer capped at 64 KiB, no read of a paused body brings more than 256 KiB", async () => {
  const { total, largest } = await readSizes(64 * 1024);
  expect(total).toBe(BODY);
  expect(largest).toBeLessThanOrEqual(256 * 1024);
});
