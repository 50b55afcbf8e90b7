/**
 * A media host on 127.0.0.1 that records every TCP connection made to it (before any HTTP is
 * read), so tests can prove a refused URL was refused before a connection, and a fetched one was
 * fetched from exactly this address. Each request is answered by `route` and then closed.
 */
import type { Socket, TCPSocketListener } from "bun";

export type MediaReply =
  | { status: number; headers?: Record<string, string>; body?: Uint8Array | string }
  /** Sends the head and some bytes, then nothing more (the fetcher's time cap ends it). */
  | { stall: true };

export interface SeenRequest {
  method: string;
  path: string;
  host: string;
}

export interface MediaServer {
  port: number;
  /** Connections opened to it, counted on open. */
  connections: number;
  requests: SeenRequest[];
  url(path: string, host?: string): string;
  stop(): void;
}

export function startMediaServer(route: (path: string) => MediaReply): MediaServer {
  const open = new Set<Socket<{ buf: string }>>();
  const state = { connections: 0, requests: [] as SeenRequest[] };
  const listener: TCPSocketListener<{ buf: string }> = Bun.listen<{ buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { buf: "" };
        state.connections++;
        open.add(socket);
      },
      data(socket, chunk) {
        socket.data.buf += Buffer.from(chunk).toString("latin1");
        const end = socket.data.buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const [line, ...headers] = socket.data.buf.slice(0, end).split("\r\n");
        const [method, path] = line!.split(" ");
        const host = headers.find((h) => /^host:/i.test(h))?.slice(5).trim() ?? "";
        state.requests.push({ method: method!, path: path!, host });
        const reply = route(path!);
        if ("stall" in reply) {
          socket.write("HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: 1000\r\n\r\nabc");
          return;
        }
        const body = typeof reply.body === "string" ? Buffer.from(reply.body) : Buffer.from(reply.body ?? new Uint8Array());
        let head = `HTTP/1.1 ${reply.status} X\r\nconnection: close\r\ncontent-length: ${body.byteLength}\r\n`;
        for (const [k, v] of Object.entries(reply.headers ?? {})) head += `${k}: ${v}\r\n`;
        socket.write(Buffer.concat([Buffer.from(head + "\r\n", "latin1"), body]));
        socket.end();
      },
      close(socket) {
        open.delete(socket);
      },
      error() {},
    },
  });
  return {
    port: listener.port,
    get connections() {
      return state.connections;
    },
    requests: state.requests,
    url: (path, host = "127.0.0.1") => `http://${host}:${listener.port}${path}`,
    stop() {
      for (const s of open) s.terminate();
      listener.stop(true);
    },
  };
}
