/**
 * A streamed HTTP response fed by an async producer: heartbeat comments keep quiet streams
 * (and any proxy in between) alive, and a client that goes away triggers `onCancel` at once.
 */
import { sseComment } from "../protocols/sse";

export interface StreamWriter {
  write(bytes: Uint8Array): void;
  readonly closed: boolean;
}

export interface StreamOptions {
  produce(w: StreamWriter): Promise<void>;
  onCancel(): void;
  /** Send a comment line when nothing was written for this long (SSE only). */
  heartbeatMs?: number;
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
  let closed = false;
  let timer: ReturnType<typeof setInterval> | null = null;
  let lastWrite = Date.now();
  let ended: StreamEnd | null = null;
  let onEnd: ((outcome: StreamEnd) => void) | null = null;
  const end = (outcome: StreamEnd) => {
    if (ended) return;
    ended = outcome;
    onEnd?.(outcome);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const w: StreamWriter = {
        write(bytes) {
          if (closed) return;
          lastWrite = Date.now();
          controller.enqueue(bytes);
        },
        get closed() {
          return closed;
        },
      };
      if (opts.heartbeatMs) {
        timer = setInterval(() => {
          if (!closed && Date.now() - lastWrite >= opts.heartbeatMs!) w.write(sseComment());
        }, Math.min(opts.heartbeatMs, 5_000));
      }
      opts
        .produce(w)
        .catch(() => {})
        .finally(() => {
          if (timer) clearInterval(timer);
          if (!closed) {
            closed = true;
            controller.close();
            end("completed");
          }
        });
    },
    cancel() {
      closed = true;
      if (timer) clearInterval(timer);
      opts.onCancel();
      end("cancelled");
    },
  });
  endWatchers.set(stream, (done) => {
    if (ended) done(ended);
    else onEnd = done;
  });
  return stream;
}
