/**
 * One request/response on a connection of the upstream HTTP/1.1 client (client.ts): it parses the
 * response as its bytes arrive (parser.ts), hands the head to the caller and queues the body for
 * its reader, pausing the socket while nothing waits for a read, and decides whether the
 * connection may carry another request (connection.ts, pool.ts).
 */
import { ChunkedDecoder, framingOf, joinInPlace, parseHead, ProtocolError, type Framing } from "./parser";
import { ConnectionClosed, destroy, release, type Connection, type ExchangeSink } from "./connection";
import type { Body, ReadResult } from "./body";

/** The response, once its head has arrived: the body is read through the exchange itself. */
export interface Response1 {
  status: number;
  headers: Map<string, string>;
  body: Body;
}

/** One request/response on a connection: parses the response and queues its body for the reader. */
export class Exchange implements Body, ExchangeSink {
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
