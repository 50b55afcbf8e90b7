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
import { ChunkedDecoder, framingOf, joinInPlace, parseHead, ProtocolError, type Framing } from "./http1-parser";
import { connect, ConnectError, ConnectionClosed, createPool, destroy, idleConnections, release, sharedPool, write, type Connection, type ExchangeSink } from "./http1-connection";
import { poolKey, type ConnectionPool } from "./pool";
import { HEADER_VALUE_UNSAFE } from "./header-value";
import type { ProxySpec } from "./proxy";

export { ProtocolError, ConnectError, ConnectionClosed, idleConnections, createPool };

/** A request header (or the request line) would carry a control character: nothing was sent. */
export class InvalidRequestHeader extends Error {}

/** Where requests go, parsed once per base URL. */
export interface Target {
  /** The pool's key. */
  origin: string;
  hostname: string;
  /** Connect to this address instead of resolving `hostname` (TLS still verifies `hostname`). */
  address?: string;
  port: number;
  tls: boolean;
  /** The Host header. */
  host: string;
  /** The base URL's path without a trailing slash (requests append theirs). */
  basePath: string;
  /** The forward proxy in between, if any. */
  proxy: ProxySpec | null;
  /** A route's own CA bundle and client certificate (PEM); null: the bundled CAs, no client certificate. */
  tlsOptions: TlsOptions | null;
}

/** PEM texts, read from the files a route names. */
export interface TlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
}

export function targetOf(baseUrl: string, via: { proxy?: ProxySpec | null; tlsOptions?: TlsOptions | null } = {}): Target {
  const u = new URL(baseUrl);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`unsupported scheme ${u.protocol}`);
  const tls = u.protocol === "https:";
  const proxy = via.proxy ?? null;
  const tlsOptions = tls ? (via.tlsOptions ?? null) : null;
  // Connections are shared only between requests that would open the same one.
  let origin = u.origin;
  if (proxy) origin += ` via ${proxy.origin}`;
  if (tlsOptions) origin += ` tls ${Bun.hash(`${tlsOptions.ca ?? ""}\0${tlsOptions.cert ?? ""}`).toString(36)}`;
  return {
    origin,
    hostname: u.hostname.replace(/^\[|\]$/g, ""),
    port: Number(u.port || (tls ? 443 : 80)),
    tls,
    host: u.host,
    basePath: u.pathname.replace(/\/+$/, ""),
    proxy,
    tlsOptions,
  };
}

export type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array };

/** A body read chunk by chunk; `cancel` stops reading (an unfinished body closes its connection). */
export interface Body {
  read(): Promise<ReadResult>;
  cancel(reason?: unknown): Promise<void>;
  /**
   * Each read is a view of a buffer that nothing else reads (a socket read of its own), so a
   * reader may free that buffer once done with the view (see upstream/timeouts.ts, readTransient).
   */
  readonly ownsReads?: boolean;
}

export interface Response1 {
  status: number;
  headers: Map<string, string>;
  body: Body;
}

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

/** One request/response on a connection: parses the response and queues its body for the reader. */
class Exchange implements Body, ExchangeSink {
  readonly response: Promise<Response1>;
  /** Every body piece is a view of a socket read (or of the gathered head) of its own. */
  readonly ownsReads = true;
  private resolveHead!: (r: Response1) => void;
  private rejectHead!: (e: Error) => void;
  /** Some response byte arrived (so a failure is not a stale pooled connection's). */
  answered = false;
  /** A response head that arrived in pieces, gathered (`headLength` bytes of it used). */
  private headBuffer: Uint8Array | null = null;
  private headLength = 0;
  private framing: Framing | null = null;
  private decoder: ChunkedDecoder | null = null;
  private lengthLeft = 0;
  private queue: Uint8Array[] = [];
  private ended = false;
  private failure: Error | null = null;
  private waiter: { resolve(r: ReadResult): void; reject(e: Error): void } | null = null;
  private reusable = true;
  /** This body paused its socket (no read is waiting: see push). */
  private paused = false;

  constructor(
    private conn: Connection | null,
    private readonly signal: AbortSignal,
    /** false: the connection closes after this reply whatever the reply says. */
    private readonly keepAlive: boolean,
  ) {
    conn!.exchange = this;
    this.response = new Promise((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
    });
    if (signal.aborted) this.fail(new ConnectionClosed("aborted"));
    else signal.addEventListener("abort", this.onAbort, { once: true });
  }

  private onAbort = () => this.fail(new ConnectionClosed("aborted"));

  onData(chunk: Uint8Array): void {
    this.answered = true;
    // Each socket read arrives in an ArrayBuffer of its own; one that did not (a view of a shared
    // buffer) is copied, since body pieces are overwritten in place and freed once read.
    if (chunk.byteOffset !== 0 || chunk.byteLength !== chunk.buffer.byteLength) chunk = chunk.slice();
    if (this.framing === null) return this.onHeadBytes(chunk);
    this.onBodyBytes(chunk);
  }

  private onHeadBytes(chunk: Uint8Array): void {
    const gathered = this.headLength > 0;
    if (gathered) this.gatherHead(chunk);
    const bytes = gathered ? this.headBuffer!.subarray(0, this.headLength) : chunk;
    let head;
    try {
      head = parseHead(bytes, gathered ? this.headLength - chunk.byteLength : 0);
    } catch (err) {
      return this.fail(err as Error);
    }
    if (head === null) {
      if (!gathered) this.gatherHead(chunk);
      return;
    }
    this.headBuffer = null;
    this.headLength = 0;
    const rest = bytes.subarray(head.length);
    if (head.status === 101) return this.fail(new ProtocolError("unexpected protocol switch"));
    // Interim responses (100, 103) are skipped: the final head follows.
    if (head.status < 200) return rest.byteLength > 0 ? this.onHeadBytes(rest) : undefined;
    const coding = head.headers.get("content-encoding");
    if (coding !== undefined && coding.toLowerCase() !== "identity") return this.fail(new ProtocolError(`unrequested content-encoding ${coding}`));
    try {
      this.framing = framingOf(head);
    } catch (err) {
      return this.fail(err as Error);
    }
    // Kept alive only when nothing about the reply is doubtful: HTTP/1.1, no `connection: close`,
    // a delimited, non-empty body (after a 204, a 304 or a zero length, a server that sends a
    // body anyway sends it late, onto the next request), not both framings at once (smuggling),
    // and a 2xx (an error may come before the server read our whole request).
    this.reusable =
      this.keepAlive &&
      head.http11 &&
      !/(?:^|,)\s*close\s*(?:,|$)/i.test(head.headers.get("connection") ?? "") &&
      this.framing.kind !== "close" &&
      this.framing.kind !== "none" &&
      !(head.headers.has("transfer-encoding") && head.headers.has("content-length")) &&
      head.status < 300;
    if (this.framing.kind === "length") this.lengthLeft = this.framing.bytes;
    if (this.framing.kind === "chunked") this.decoder = new ChunkedDecoder();
    this.resolveHead({ status: head.status, headers: head.headers, body: this });
    if (this.framing.kind === "none") this.finish(rest);
    else if (rest.byteLength > 0) this.onBodyBytes(rest);
  }

  /** Appends to the head gathered so far (in a buffer that doubles, so gathering is linear). */
  private gatherHead(chunk: Uint8Array): void {
    const need = this.headLength + chunk.byteLength;
    if (this.headBuffer === null || this.headBuffer.byteLength < need) {
      const grown = new Uint8Array(Math.max(need, 2 * (this.headBuffer?.byteLength ?? 2048)));
      if (this.headBuffer !== null) grown.set(this.headBuffer.subarray(0, this.headLength));
      this.headBuffer = grown;
    }
    this.headBuffer.set(chunk, this.headLength);
    this.headLength = need;
  }

  private onBodyBytes(bytes: Uint8Array): void {
    const framing = this.framing!;
    if (framing.kind === "close") return this.push(bytes);
    if (framing.kind === "length") {
      const n = Math.min(this.lengthLeft, bytes.byteLength);
      this.push(bytes.subarray(0, n));
      this.lengthLeft -= n;
      if (this.lengthLeft === 0) this.finish(bytes.subarray(n));
      return;
    }
    let pieces: Uint8Array[];
    try {
      pieces = this.decoder!.push(bytes);
    } catch (err) {
      return this.fail(err as Error);
    }
    // One socket read often holds many small chunks (an SSE frame each): they are handed on as
    // one piece, so that the relay makes one read of them, not one per frame — joined in the
    // read's own buffer, not copied into another (docs/architecture.md, "Memory per stream").
    if (pieces.length === 1) this.push(pieces[0]!);
    else if (pieces.length > 1) this.push(joinInPlace(pieces));
    if (this.decoder!.done) this.finish(this.decoder!.rest);
  }

  private push(piece: Uint8Array): void {
    if (piece.byteLength === 0) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ done: false, value: piece });
    } else {
      this.queue.push(piece);
    }
    // Nothing waits for more now: the socket is read again when a read asks (read). Reading on
    // meanwhile put a second socket read (up to ~128 KB) in the queue of every stream whose relay
    // was still handing out the last one (docs/architecture.md, "Memory per stream").
    if (!this.paused && this.conn?.socket) {
      this.paused = true;
      this.conn.socket.pause();
    }
  }

  /** The response ended; `extra` is whatever followed it (a well-behaved server sends nothing). */
  private finish(extra: Uint8Array | null): void {
    const conn = this.conn;
    this.ended = true;
    this.detach();
    if (this.waiter && this.queue.length === 0) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ done: true });
    }
    if (conn === null) return;
    // A reply that came before the whole request went out (an early 413) leaves the connection
    // mid-request: it cannot carry another.
    if (this.reusable && (extra === null || extra.byteLength === 0) && conn.unsent === null) release(conn);
    else destroy(conn);
  }

  /** The connection closed (or broke); `error` when it broke. */
  onClose(error?: Error): void {
    // A close-delimited body ends with its connection (which is never reused).
    if (this.framing?.kind === "close" && error === undefined) return this.finish(null);
    this.fail(new ConnectionClosed(error ? `connection broke: ${error.message}` : "connection closed before the response ended"));
  }

  fail(err: Error): void {
    if (this.ended) return;
    const conn = this.conn;
    this.ended = true;
    this.failure = err;
    this.queue = [];
    this.detach();
    if (conn !== null) destroy(conn);
    if (this.framing === null) this.rejectHead(err);
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(err);
    }
  }

  private detach(): void {
    this.signal.removeEventListener("abort", this.onAbort);
    if (this.conn !== null && this.conn.exchange === this) this.conn.exchange = null;
    // A finished body's socket goes back to the pool, reading again.
    if (this.paused) this.resumeSocket();
    this.conn = null;
  }

  read(): Promise<ReadResult> {
    if (this.queue.length > 0) {
      const value = this.queue.shift()!;
      return Promise.resolve({ done: false, value });
    }
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve({ done: true });
    if (this.waiter) return Promise.reject(new Error("a body is read one read at a time"));
    const next = new Promise<ReadResult>((resolve, reject) => (this.waiter = { resolve, reject }));
    if (this.paused) this.resumeSocket();
    return next;
  }

  private resumeSocket(): void {
    this.paused = false;
    this.conn?.socket?.resume();
  }

  cancel(): Promise<void> {
    if (!this.ended) this.fail(new ConnectionClosed("body cancelled"));
    this.failure = null;
    this.queue = [];
    return Promise.resolve();
  }
}
