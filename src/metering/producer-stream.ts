/**
 * A streamed response body fed by an async producer (a metered stream's ByteSink, metered-stream.ts), with backpressure: the bytes written wait in
 * a queue of their own, handed to the server one chunk per read it asks for (Bun asks only while
 * the client's socket takes bytes), so the producer can see when the client falls behind and stop
 * reading its own source (`ready()`), and can tell how many bytes the client's connection took
 * (`taken`). Heartbeat comments keep quiet streams (and any proxy in between) alive, and a client
 * that goes away triggers `onCancel` at once.
 */
import { sseComment } from "../protocols/sse";
import { everyPeriod } from "./shared-ticker";
import { freeNow } from "../runtime/memory";

const HEARTBEAT = new TextEncoder().encode(sseComment());

/**
 * Bytes queued for one client above which its producer should wait (see StreamWriter.ready). What
 * is queued is also what a relay must keep the text of, to bill a client that leaves for what it
 * took (tokens/token-tally.ts, KEEP_CHARS): 32 KiB cost ~0.1 MB more per open stream at its peak
 * (test/bench/stream-memory.bench.ts) and relayed no faster.
 */
export const STREAM_HIGH_WATER_BYTES = 16 * 1024;

export interface StreamWriter {
  /**
   * Queues bytes for the client; never blocks (call ready() before producing more). `owned`: the
   * bytes are the whole of an ArrayBuffer nothing else uses, freed once the server has taken them.
   */
  write(bytes: Uint8Array, owned?: boolean): void;
  /**
   * Resolves once the bytes queued for the client are below the high-water mark, or once the
   * stream has ended (check `closed`); undefined when that is so already (nothing to wait for).
   */
  ready(): Promise<void> | undefined;
  readonly closed: boolean;
  /** Bytes the client's connection has taken so far (the rest are still queued here). */
  readonly taken: number;
  /** Ends the response as a failed transfer (the client sees it cut off, not complete). */
  abort(): void;
}

export interface StreamOptions {
  produce(w: StreamWriter): Promise<void>;
  /** The client went away, or stopped reading for `stallTimeoutMs`: the producer should stop. */
  onCancel(reason: "gone" | "stalled"): void;
  /**
   * A client that takes nothing of what is queued for it for this long is cut off (the response
   * ends as a failed transfer, and onCancel is called).
   */
  stallTimeoutMs?: number;
  /** Send a comment line when nothing was written for this long (SSE only). */
  heartbeatMs?: number;
  /** Default STREAM_HIGH_WATER_BYTES. */
  highWaterBytes?: number;
}

export type StreamEnd = "completed" | "cancelled" | "failed";

/** For each producer stream: how to hear (once) that it ended. */
const endWatchers = new WeakMap<ReadableStream<Uint8Array>, (done: (outcome: StreamEnd) => void) => void>();

/**
 * Calls `done` once when `body` — a stream made by producerStream — has ended (at once if it
 * already has), and says true; says false for any other stream, which the caller must watch itself.
 * This spares the request lifecycle a second stream wrapped around every SSE body.
 */
export function watchProducerEnd(body: ReadableStream<Uint8Array>, done: (outcome: StreamEnd) => void): boolean {
  const watch = endWatchers.get(body);
  if (!watch) return false;
  watch(done);
  return true;
}

export function producerStream(opts: StreamOptions): ReadableStream<Uint8Array> {
  const highWater = opts.highWaterBytes ?? STREAM_HIGH_WATER_BYTES;
  let closed = false;
  /** Unregister the heartbeat and stall checks (shared timers, see shared-ticker.ts). */
  let stopHeartbeat: (() => void) | null = null;
  let stopStallCheck: (() => void) | null = null;
  let lastWrite = Date.now();
  let ended: StreamEnd | null = null;
  let onEnd: ((outcome: StreamEnd) => void) | null = null;
  const end = (outcome: StreamEnd) => {
    if (ended) return;
    ended = outcome;
    onEnd?.(outcome);
  };

  /** Written, not yet handed to the server. */
  const queue: Uint8Array[] = [];
  /** The chunks of the queue that were written as owned (see StreamWriter.write). */
  const owned = new WeakSet<Uint8Array>();
  /**
   * The last chunk handed to the server, when owned: freed when the server asks for the next one.
   * Bun's server asks only once its sink has taken the last chunk, which it writes to the socket
   * or copies into its own buffer at once; the chunk is not read after that. Without this, a
   * chunk that waited in the queue across a young collection was promoted and stayed until a
   * full one (docs/architecture.md, "Memory per stream").
   */
  let handed: Uint8Array | null = null;
  let queuedBytes = 0;
  let taken = 0;
  /** Since when bytes have been queued with nothing taken (null: the client is keeping up). */
  let waitingSince: number | null = null;
  /** The server's pending read, when the queue was empty as it asked. */
  let pendingPull: (() => void) | null = null;
  /** Producers waiting for the queue to drain below the high-water mark. */
  let waiters: (() => void)[] = [];
  /** Set once the producer is done: the stream closes when the queue is empty. */
  let finished = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const wakeWaiters = () => {
    if (waiters.length === 0 || (queuedBytes >= highWater && !closed)) return;
    const woken = waiters;
    waiters = [];
    for (const w of woken) w();
  };
  const stopTimer = () => {
    stopHeartbeat?.();
    stopStallCheck?.();
    stopHeartbeat = stopStallCheck = null;
  };
  /** Hands the oldest queued chunk to the server's read. */
  const handOver = () => {
    if (handed !== null) freeNow(handed.buffer);
    const chunk = queue.shift()!;
    handed = owned.has(chunk) ? chunk : null;
    queuedBytes -= chunk.byteLength;
    taken += chunk.byteLength;
    waitingSince = queue.length > 0 ? Date.now() : null;
    controller.enqueue(chunk);
    wakeWaiters();
  };
  const closeIfDone = () => {
    if (!finished || closed || queue.length > 0) return;
    closed = true;
    stopTimer();
    controller.close();
    end("completed");
    wakeWaiters();
  };

  const w: StreamWriter = {
    write(bytes, own = false) {
      if (closed || finished || bytes.byteLength === 0) return;
      lastWrite = Date.now();
      if (own && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) owned.add(bytes);
      queue.push(bytes);
      queuedBytes += bytes.byteLength;
      waitingSince ??= Date.now();
      if (pendingPull) {
        const pull = pendingPull;
        pendingPull = null;
        handOver();
        pull();
      }
    },
    ready() {
      if (closed || queuedBytes < highWater) return undefined;
      return new Promise<void>((resolve) => waiters.push(resolve));
    },
    get closed() {
      return closed;
    },
    get taken() {
      return taken;
    },
    abort() {
      if (closed) return;
      closed = true;
      stopTimer();
      queue.length = 0;
      queuedBytes = 0;
      controller.error(new Error("stream aborted"));
      end("failed");
      wakeWaiters();
    },
  };
  const stalled = () => {
    if (closed) return;
    w.abort();
    opts.onCancel("stalled");
  };

  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        const heartbeatMs = opts.heartbeatMs;
        if (heartbeatMs) {
          stopHeartbeat = everyPeriod(Math.min(heartbeatMs, 5_000), () => {
            // A client that is not reading needs no heartbeat, and must not get one queued.
            if (!closed && queue.length === 0 && Date.now() - lastWrite >= heartbeatMs) w.write(HEARTBEAT);
          });
        }
        const stallMs = opts.stallTimeoutMs;
        if (stallMs) {
          stopStallCheck = everyPeriod(Math.max(10, Math.round(Math.min(stallMs / 4, 5_000))), () => {
            if (waitingSince !== null && Date.now() - waitingSince >= stallMs) stalled();
          });
        }
        opts
          .produce(w)
          .catch(() => {})
          .finally(() => {
            finished = true;
            if (closed) return stopTimer();
            if (pendingPull && queue.length === 0) {
              const pull = pendingPull;
              pendingPull = null;
              closeIfDone();
              pull();
            } else closeIfDone();
          });
      },
      // High-water mark 0: the server calls pull only when it wants bytes for the client.
      pull() {
        if (queue.length > 0) {
          handOver();
          closeIfDone();
          return;
        }
        if (finished) return closeIfDone();
        return new Promise<void>((resolve) => (pendingPull = resolve));
      },
      cancel() {
        closed = true;
        stopTimer();
        queue.length = 0;
        queuedBytes = 0;
        const pull = pendingPull;
        pendingPull = null;
        pull?.();
        opts.onCancel("gone");
        end("cancelled");
        wakeWaiters();
      },
    },
    { highWaterMark: 0 },
  );
  endWatchers.set(stream, (done) => {
    if (ended) done(ended);
    else onEnd = done;
  });
  return stream;
}
