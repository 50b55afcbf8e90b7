/**
 * A TCP proxy that delays every byte by a fixed time each way: PostgreSQL "on another machine"
 * for the scale-out bench. Order is kept per direction; a slow reader's backpressure holds the
 * queue (written on drain). Run in a process of its own (below), so the load generator's work
 * does not stretch its timers: every chunk waits at least `delayMs`, never less.
 */
import type { Socket, TCPSocketListener } from "bun";

interface Side {
  /** Chunks waiting for their time, oldest first. */
  queue: { at: number; data: Uint8Array }[];
  timer: ReturnType<typeof setTimeout> | null;
  /** Waiting for the destination to drain. */
  blocked: boolean;
}

interface Link {
  client: Socket<Link>;
  server: Socket<Link> | null;
  /** Client → server, and server → client. */
  up: Side;
  down: Side;
  closed: boolean;
}

const side = (): Side => ({ queue: [], timer: null, blocked: false });

export interface DelayProxy {
  port: number;
  stop(): void;
}

export function startDelayProxy(target: { hostname: string; port: number }, delayMs: number): DelayProxy {
  const flush = (link: Link, s: Side, dest: () => Socket<Link> | null): void => {
    if (s.timer) {
      clearTimeout(s.timer);
      s.timer = null;
    }
    const to = dest();
    if (!to || link.closed) return;
    const now = performance.now();
    while (s.queue.length > 0 && s.queue[0]!.at <= now && !s.blocked) {
      const head = s.queue[0]!;
      const written = to.write(head.data);
      if (written < head.data.byteLength) {
        head.data = head.data.subarray(Math.max(0, written));
        s.blocked = true;
        return;
      }
      s.queue.shift();
    }
    if (s.queue.length > 0 && !s.blocked) s.timer = setTimeout(() => flush(link, s, dest), Math.max(0, s.queue[0]!.at - performance.now()));
  };
  const push = (link: Link, s: Side, data: Uint8Array, dest: () => Socket<Link> | null) => {
    s.queue.push({ at: performance.now() + delayMs, data: new Uint8Array(data) });
    if (!s.timer && !s.blocked) s.timer = setTimeout(() => flush(link, s, dest), delayMs);
  };
  const close = (link: Link) => {
    if (link.closed) return;
    link.closed = true;
    for (const s of [link.up, link.down]) if (s.timer) clearTimeout(s.timer);
    link.client.end();
    link.server?.end();
  };

  const listener: TCPSocketListener<Link> = Bun.listen<Link>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        const link: Link = { client, server: null, up: side(), down: side(), closed: false };
        client.data = link;
        void Bun.connect<Link>({
          hostname: target.hostname,
          port: target.port,
          data: link,
          socket: {
            open(server) {
              link.server = server;
              flush(link, link.up, () => link.server);
            },
            data(_server, d) {
              push(link, link.down, d, () => link.client);
            },
            drain() {
              link.up.blocked = false;
              flush(link, link.up, () => link.server);
            },
            close() {
              close(link);
            },
            error() {
              close(link);
            },
          },
        }).catch(() => close(link));
      },
      data(client, d) {
        const link = client.data;
        push(link, link.up, d, () => link.server);
      },
      drain(client) {
        const link = client.data;
        link.down.blocked = false;
        flush(link, link.down, () => link.client);
      },
      close(client) {
        close(client.data);
      },
      error(client) {
        close(client.data);
      },
    },
  });
  return { port: listener.port, stop: () => listener.stop(true) };
}

// Its own process (startScriptProcess): DELAY_PROXY_TARGET=host:port DELAY_MS=1 bun delay-proxy.ts
if (import.meta.main) {
  const [hostname, port] = (process.env.DELAY_PROXY_TARGET ?? "").split(":");
  const proxy = startDelayProxy({ hostname: hostname!, port: Number(port) }, Number(process.env.DELAY_MS ?? 1));
  console.log(JSON.stringify({ url: `tcp://127.0.0.1:${proxy.port}` }));
  process.on("SIGTERM", () => {
    proxy.stop();
    process.exit(0);
  });
}
