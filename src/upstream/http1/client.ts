/**
 * The upstream HTTP/1.1 client: one request at a time per connection over `Bun.connect`, with
 * keep-alive connections pooled per origin and partition (pool.ts: the gateway's partition is the
 * account, so that a connection never carries two accounts' requests).
 *
 * Why not fetch: a relay must read its upstream only as fast as its client takes bytes. Bun's
 * fetch keeps reading a body nobody reads into ~0.5 MB buffers, and with the rest of its
 * bookkeeping a paused fetch body costs ~1.6 MB per connection (40 stalled 14 MB streams through
 * a bare relay: +66 MB, against +19 MB over Bun.connect and +39 MB with the undici package, in one
 * harness). Here a body's socket is read only while its reader waits for a read, so a body holds
 * at most what one socket read brought, and the kernel's TCP window stalls the upstream. It also
 * gives the connect deadline fetch lacks.
 *
 * Scope, on purpose: requests with a known-length body (the gateway sends JSON), responses of any
 * HTTP/1.x framing, no redirects, no content codings (we ask for identity and refuse others).
 * TLS certificates are verified, for the URL's host name, against the bundled CAs or the route's
 * own CA bundle; a route may present a client certificate. Forward proxies (proxy.ts): absolute-
 * form requests for http:// upstreams, a CONNECT tunnel for https:// ones.
 *
 * Why our own client and not the undici package (Node's, with ProxyAgent and per-origin TLS):
 * measured in one harness on the same machine and run (docs/upstream-client.md), a bare relay over
 * undici 7.30 took 113-115 µs of CPU per small request against 31-39 µs here, held 34-40 MB
 * against 14-29 MB for 40 stalled 14 MB streams, and adds 1.9 MB to the binary against 16 KB.
 */
import { connect, ConnectError, ConnectionClosed, createPool, idleConnections, sharedPool, write } from "./connection";
import { Exchange, type Response1 } from "./exchange";
import { poolKey, type ConnectionPool } from "./pool";
import { HEADER_VALUE_UNSAFE } from "./header-value";
import type { Target } from "./target";
import { ProtocolError } from "./parser";

// The client's whole surface, for callers outside this folder.
export { ProtocolError, ConnectError, ConnectionClosed, idleConnections, createPool };
export { targetOf, type Target, type TlsOptions } from "./target";
export { BodyTooLarge, readAllText, readBoundedText } from "./body";

/** A request header (or the request line) would carry a control character: nothing was sent. */
export class InvalidRequestHeader extends Error {}

export interface Request1 {
  target: Target;
  method: string;
  /** Appended to the target's base path. */
  path: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  connectTimeoutMs: number;
  /** The keep-alive pool (default: the shared one). */
  pool?: ConnectionPool;
  /** Connections are pooled per origin and this (the account): default "", one partition. */
  partition?: string;
  /** false: `connection: close`, a new connection for this request, closed after it. Default true. */
  keepAlive?: boolean;
}

/**
 * A pooled connection that the server closed as our request went out closes within a round trip
 * of the write. A close later than this may follow a request the upstream received and worked on:
 * that is not sent again.
 */
const STALE_CLOSE_WITHIN_MS = 250;

/** Sends a request and resolves with the response once its head has arrived. */
export async function request1(req: Request1): Promise<Response1> {
  if (req.signal.aborted) throw new ConnectionClosed("aborted");
  const keepAlive = req.keepAlive ?? true;
  const bytes = encodeRequest(req, keepAlive);
  const pool = req.pool ?? sharedPool;
  const key = poolKey(req.target.origin, req.partition ?? "");
  // A pooled connection the server closed just as we wrote to it fails before any response byte:
  // that one failure is retried once, on a new connection.
  for (let fresh = !keepAlive; ; fresh = true) {
    const conn = (fresh ? null : pool.take(key)) ?? (await connect(req.target, pool, key, req.connectTimeoutMs, req.signal));
    const reused = conn.served > 0;
    const exchange = new Exchange(conn, req.signal, keepAlive);
    write(conn, bytes);
    const writtenAt = Date.now();
    try {
      return await exchange.response;
    } catch (err) {
      const stale = reused && !exchange.answered && err instanceof ConnectionClosed && Date.now() - writtenAt < STALE_CLOSE_WITHIN_MS;
      if (stale && !fresh && !req.signal.aborted) continue;
      throw err;
    }
  }
}

/** A header name is a token (RFC 9110 5.1). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The request target: visible ASCII only. */
const BAD_TARGET = /[^\x21-\x7e]/;

/**
 * Head and body in one buffer, each encoded once straight into it (bodies run to megabytes).
 * A header that would put a CR, LF, NUL or other control byte on the wire is refused before
 * anything is written; the error names the header, never its value (it may be a key).
 */
function encodeRequest(req: Request1, keepAlive: boolean): Uint8Array {
  const bodyBytes = Buffer.byteLength(req.body, "utf8");
  const target = `${req.target.basePath}${req.path}`;
  if (BAD_TARGET.test(target) || !TOKEN.test(req.method)) throw new InvalidRequestHeader("the request line holds a character it must not");
  const t = req.target;
  // Through a proxy, a plain-HTTP request names its whole URL (RFC 9112 §3.2.2); a tunnelled one does not.
  const forwarded = t.proxy !== null && !t.tls;
  let head = `${req.method} ${forwarded ? `http://${t.host}` : ""}${target} HTTP/1.1\r\nhost: ${t.host}\r\n`;
  if (forwarded && t.proxy!.authorization) head += `proxy-authorization: ${t.proxy!.authorization}\r\n`;
  for (const name in req.headers) {
    const value = req.headers[name]!;
    if (!TOKEN.test(name)) throw new InvalidRequestHeader("a request header name is not a token");
    if (HEADER_VALUE_UNSAFE.test(value)) throw new InvalidRequestHeader(`request header ${name} holds a control character`);
    head += `${name}: ${value}\r\n`;
  }
  if (!keepAlive) head += "connection: close\r\n";
  head += `accept-encoding: identity\r\ncontent-length: ${bodyBytes}\r\n\r\n`;
  const headBytes = Buffer.byteLength(head, "latin1");
  const all = Buffer.allocUnsafe(headBytes + bodyBytes);
  all.write(head, 0, "latin1");
  all.write(req.body, headBytes, "utf8");
  return all;
}

/**
 * Aborts `controller` as soon as `signal` aborts (at once when it already has): the cheap
 * equivalent of `AbortSignal.any([signal, controller.signal])` when the controller's own signal
 * is the one handed on (a request's signal that the caller's deadline aborts too).
 */
export function abortWith(signal: AbortSignal, controller: AbortController): void {
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
}
