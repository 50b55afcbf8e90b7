/**
 * The connections under the upstream HTTP/1.1 client (client.ts): opening one (with its deadline,
 * and for TLS a verified certificate), writing a request whole, passing what arrives to the
 * connection's current exchange, and handing finished ones back to their keep-alive pool (pool.ts).
 */
import type { Socket, SocketHandler } from "bun";
import { isIP } from "node:net";
import type { Target, TlsOptions } from "./target";
import { parseHead } from "./parser";
import { ConnectionPool, type PoolLimits } from "./pool";
import { capReceiveBuffer } from "../../runtime/memory";

/** No connection could be made (refused, unresolvable, TLS refused, or the deadline passed). */
export class ConnectError extends Error {}
/** The connection ended (or broke) before the response did. */
export class ConnectionClosed extends Error {}

/** The request/response a connection serves now: it hears of every byte and of the close. */
export interface ExchangeSink {
  onData(chunk: Uint8Array): void;
  onClose(error?: Error): void;
}

export interface Connection {
  socket: Socket<Connection> | null;
  origin: string;
  /** Its key in `pool` (origin and partition): it only ever carries requests of that key. */
  key: string;
  /** The pool it goes back to when a reply leaves it reusable. */
  pool: ConnectionPool;
  exchange: ExchangeSink | null;
  /** Responses completed on it (a reused connection may have been closed by the server meanwhile). */
  served: number;
  idleSince: number;
  closed: boolean;
  /** Request bytes the socket has not taken yet (written on drain). */
  unsent: Uint8Array | null;
  /** Set while connecting: hears of the open (after the TLS handshake) or of the failure. */
  connecting: ((err: Error | null) => void) | null;
  tls: boolean;
  /** Through a proxy to a TLS upstream: the CONNECT request, and what the proxy answered so far. */
  tunnel: { request: string; answer: Uint8Array; socket: Socket<Connection> | null; open: boolean } | null;
}

const handlers: SocketHandler<Connection> = {
  open(socket) {
    socket.data.socket = socket;
    if (!socket.data.tls) socket.data.connecting?.(null);
  },
  // The certificate must verify for the name asked for; otherwise the connection never opens.
  handshake(socket, success, authorizationError) {
    if (success && authorizationError === null) return socket.data.connecting?.(null);
    socket.data.connecting?.(new ConnectError(`TLS refused: ${authorizationError?.message ?? "handshake failed"}`));
  },
  data(socket, chunk) {
    const conn = socket.data;
    if (conn.exchange) conn.exchange.onData(chunk);
    // Bytes on an idle connection answer nothing we asked: the connection is not to be trusted.
    else destroy(conn);
  },
  drain(socket) {
    const conn = socket.data;
    if (conn.unsent) write(conn, conn.unsent);
  },
  close(socket, error) {
    const conn = socket.data;
    conn.connecting?.(new ConnectError(error ? `connection failed: ${error.message}` : "connection closed while opening"));
    conn.closed = true;
    conn.pool.remove(conn);
    conn.exchange?.onClose(error);
  },
  error(socket, error) {
    socket.data.exchange?.onClose(error);
    destroy(socket.data);
  },
  connectError() {},
};

/** TLS options for a target: the name to verify (and send as SNI), the route's CA and client certificate. */
function tlsFor(target: Target): true | (TlsOptions & { serverName?: string }) {
  // SNI carries names only (RFC 6066); an address is still verified against the certificate.
  const serverName = isIP(target.hostname) ? undefined : target.hostname;
  if (serverName === undefined && target.tlsOptions === null) return true;
  return { ...target.tlsOptions, serverName };
}

/**
 * The plain socket to a proxy, until its CONNECT is answered: then TLS to the upstream runs over it
 * (upgradeTLS), and the TLS socket, with the ordinary handlers, is the connection's socket.
 */
const tunnelHandlers: SocketHandler<Connection> = {
  open(socket) {
    socket.data.tunnel!.socket = socket;
    socket.write(socket.data.tunnel!.request);
  },
  data(socket, chunk) {
    const conn = socket.data;
    const tunnel = conn.tunnel!;
    // After the upgrade these are TLS records, which the TLS socket reads.
    if (tunnel.open) return;
    const answer = new Uint8Array(tunnel.answer.byteLength + chunk.byteLength);
    answer.set(tunnel.answer);
    answer.set(chunk, tunnel.answer.byteLength);
    tunnel.answer = answer;
    let head;
    try {
      head = parseHead(answer);
    } catch (err) {
      return conn.connecting?.(new ConnectError(`proxy answered CONNECT wrongly: ${(err as Error).message}`));
    }
    if (head === null) return;
    if (head.status < 200 || head.status > 299) return conn.connecting?.(new ConnectError(`proxy answered CONNECT with ${head.status}`));
    // A TLS client speaks first: bytes after the proxy's answer are not the upstream's.
    if (answer.byteLength > head.length) return conn.connecting?.(new ConnectError("proxy sent bytes before the TLS handshake"));
    tunnel.open = true;
    tunnel.answer = new Uint8Array(0);
    const [, tls] = socket.upgradeTLS<Connection>({ data: conn, tls: tlsFor(targets.get(conn)!), socket: handlers });
    conn.socket = tls;
  },
  drain() {},
  close(socket, error) {
    handlers.close!(socket, error);
  },
  error(socket, error) {
    handlers.error!(socket, error);
  },
  connectError() {},
};

/** The target each tunnelled connection is for (read once, when its CONNECT is answered). */
const targets = new WeakMap<Connection, Target>();

export function write(conn: Connection, bytes: Uint8Array): void {
  const n = conn.socket!.write(bytes);
  // -1: the socket is closing; its close handler fails the exchange.
  conn.unsent = n >= 0 && n < bytes.byteLength ? bytes.subarray(n) : null;
}

export function connect(target: Target, pool: ConnectionPool, key: string, timeoutMs: number, signal: AbortSignal): Promise<Connection> {
  if (signal.aborted) return Promise.reject(new ConnectionClosed("aborted"));
  const proxy = target.proxy;
  const authority = `${target.host.includes(":") ? target.host : `${target.host}:${target.port}`}`;
  const tunnel: Connection["tunnel"] = proxy && target.tls
    ? { request: `CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n${proxy.authorization ? `proxy-authorization: ${proxy.authorization}\r\n` : ""}\r\n`, answer: new Uint8Array(0), socket: null, open: false }
    : null;
  const conn: Connection = { socket: null, origin: target.origin, key, pool, exchange: null, served: 0, idleSince: 0, closed: false, unsent: null, connecting: null, tls: target.tls, tunnel };
  if (tunnel) targets.set(conn, target);
  return new Promise((resolve, reject) => {
    const settle = (err: Error | null) => {
      conn.connecting = null;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      if (err === null) {
        conn.socket!.setNoDelay(true);
        capReceiveBuffer(conn.socket!, pool.limits.receiveBufferBytes ?? 0);
        return resolve(conn);
      }
      destroy(conn);
      reject(err);
    };
    conn.connecting = settle;
    const timer = setTimeout(() => settle(new ConnectError(`no connection within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => settle(new ConnectionClosed("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    // The promise resolves on the TCP connection, before any TLS handshake: `open` (plain) or
    // `handshake` (TLS) decides.
    Bun.connect<Connection>({
      hostname: proxy ? proxy.hostname : (target.address ?? target.hostname),
      port: proxy ? proxy.port : target.port,
      tls: target.tls && !proxy ? tlsFor(target) : undefined,
      data: conn,
      socket: tunnel ? tunnelHandlers : handlers,
    }).then(
      (socket) => {
        if (tunnel) tunnel.socket = socket;
        else conn.socket = socket;
        if (conn.closed) socket.terminate();
      },
      (err: Error) => conn.connecting?.(new ConnectError(err?.message ?? String(err))),
    );
  });
}

/** A keep-alive pool of connections made here. */
export function createPool(limits?: PoolLimits): ConnectionPool {
  return new ConnectionPool((conn) => destroy(conn), limits);
}

/** The pool of requests that name none (tests of the client itself); a server has its own. */
export const sharedPool = createPool();

/** A connection whose reply left it reusable goes back to its pool, idle. */
export function release(conn: Connection): void {
  if (conn.closed) return;
  conn.served++;
  conn.idleSince = Date.now();
  conn.pool.put(conn);
}

export function destroy(conn: Connection): void {
  conn.pool.remove(conn);
  if (conn.closed) return;
  conn.closed = true;
  conn.socket?.terminate();
  conn.tunnel?.socket?.terminate();
}

/** Idle connections of an origin in the shared pool (for tests). */
export function idleConnections(origin: string): number {
  return sharedPool.idle(origin);
}
