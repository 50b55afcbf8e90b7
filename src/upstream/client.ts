/**
 * HTTP to an upstream OpenAI-compatible server with three deadlines: connect, first byte (the
 * response headers *and* the first body chunk, so a stream that opens and then says nothing can
 * still fail over), and idle (between body chunks, enforced by the returned body). Failures are
 * classified so the caller can decide whether trying the next route is safe. Nothing here formats
 * client-facing text: upstream names and error bodies stay internal.
 */
import type { Upstream } from "./registry";
import { abortWith, ConnectError, InvalidRequestHeader, readAllText, request1, targetOf, type Target } from "./http1/client";
import type { ConnectionPool } from "./http1/pool";
import { idleGuardedReader, type GuardedBody } from "./http1/idle-reader";

/** `config`: the route's own settings made a request we refuse to send (a control byte in its key). */
export type FailureKind = "connect" | "timeout" | "status" | "aborted" | "config";

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    readonly status: number | null,
    /** Internal detail for logs only; never sent to a client. */
    readonly detail: string,
  ) {
    super(`${kind}${status ? ` ${status}` : ""}: ${detail}`);
  }

  /**
   * Before the first byte, these may be retried on another route without any harm: the route
   * could not serve (unreachable, slow, at capacity, broken, misconfigured key or model name).
   * 400/413/422 say the request itself is wrong, so another route would refuse it too.
   */
  get retryable(): boolean {
    if (this.kind === "connect" || this.kind === "timeout" || this.kind === "config") return true;
    if (this.kind !== "status" || this.status === null) return false;
    return this.status >= 500 || [401, 403, 404, 408, 409, 425, 429].includes(this.status);
  }

  /** Says something about the route's health (the circuit breaker counts it). */
  get routeFault(): boolean {
    return this.kind !== "aborted" && this.retryable;
  }

  /** A 5xx answer: the request's own content may have caused it (see breaker.ts). */
  get mayBeContent(): boolean {
    return this.kind === "status" && this.status !== null && this.status >= 500;
  }
}

/** Where an upstream's requests go (its URL, proxy and TLS material), parsed once per upstream. */
const targets = new WeakMap<Upstream, Target>();
export function targetFor(upstream: Upstream): Target {
  let t = targets.get(upstream);
  if (t === undefined) targets.set(upstream, (t = targetOf(upstream.baseUrl, { proxy: upstream.proxy, tlsOptions: upstream.tls })));
  return t;
}

export interface UpstreamCall {
  /** Aborted when the client goes away (or the caller stops the stream). */
  signal: AbortSignal;
  /** Called when the body later stalls past the idle deadline or breaks (not by our abort). */
  onMidStreamFailure?: () => void;
  /** The keep-alive pool and its partition (the account): a connection never serves two partitions. */
  pool?: ConnectionPool;
  partition?: string;
}

/** A 2xx answer whose first body chunk arrived; the body is the caller's to read (or cancel). */
export interface UpstreamReply {
  status: number;
  /** Guarded by the idle deadline between chunks. */
  body: GuardedBody;
  /** That deadline: the route's idle timeout (a relay gives a client that stops reading as long). */
  idleTimeoutMs: number;
}

/**
 * POSTs a chat-completions body. Resolves once the status is 2xx and the first body chunk
 * arrived; the reply's body is the caller's to read, guarded by the idle deadline.
 */
export async function postChatCompletions(upstream: Upstream, body: unknown, call: UpstreamCall): Promise<UpstreamReply> {
  const { signal } = call;
  const attempt = new AbortController();
  /** The first-byte deadline passed. */
  let late = false;
  // The client's abort reaches the upstream request through `attempt`.
  abortWith(signal, attempt);
  let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
    late = true;
    attempt.abort();
  }, upstream.firstByteTimeoutMs);
  try {
    const res = await request1({
      target: targetFor(upstream),
      method: "POST",
      path: "/chat/completions",
      headers: headersFor(upstream),
      body: JSON.stringify(body),
      signal: attempt.signal,
      connectTimeoutMs: upstream.connectTimeoutMs,
      pool: call.pool,
      partition: call.partition,
      keepAlive: upstream.keepAlive,
    });
    if (res.status < 200 || res.status >= 300) {
      const text = await readAllText(res.body, ERROR_BODY_BYTES).catch(() => "");
      throw new UpstreamFailure("status", res.status, text.slice(0, 500));
    }
    const first = await res.body.read();
    clearTimeout(timer);
    timer = undefined;
    const guarded = idleGuardedReader(first.done ? null : first.value, res.body, upstream.idleTimeoutMs, {
      onIdle() {
        attempt.abort();
        call.onMidStreamFailure?.();
      },
      onBroken() {
        if (!signal.aborted) call.onMidStreamFailure?.();
      },
    });
    return { status: res.status, body: guarded, idleTimeoutMs: upstream.idleTimeoutMs };
  } catch (err) {
    clearTimeout(timer);
    throw classify(err, signal, late, upstream);
  }
}

/** Of an error answer, only this much is read (its start goes to the logs). */
const ERROR_BODY_BYTES = 16 * 1024;

/** Why the attempt failed, for the caller (and its logs): the client, a deadline, or the upstream. */
function classify(err: unknown, signal: AbortSignal, late: boolean, upstream: Upstream): UpstreamFailure {
  if (signal.aborted) return new UpstreamFailure("aborted", null, "client went away");
  if (err instanceof ConnectError) return new UpstreamFailure("connect", null, err.message);
  if (err instanceof InvalidRequestHeader) return new UpstreamFailure("config", null, err.message);
  if (late) return new UpstreamFailure("timeout", null, `no first byte within ${upstream.firstByteTimeoutMs} ms`);
  return err instanceof UpstreamFailure ? err : new UpstreamFailure("connect", null, String((err as Error)?.message ?? err));
}

/** The request headers of one upstream, built once. */
const upstreamHeaders = new WeakMap<Upstream, Record<string, string>>();
function headersFor(upstream: Upstream): Record<string, string> {
  let headers = upstreamHeaders.get(upstream);
  if (headers === undefined) {
    headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (upstream.apiKey) headers.authorization = `Bearer ${upstream.apiKey}`;
    upstreamHeaders.set(upstream, headers);
  }
  return headers;
}
