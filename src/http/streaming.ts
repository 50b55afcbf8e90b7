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

export function producerStream(opts: StreamOptions): ReadableStream<Uint8Array> {
  let closed = false;
  let timer: ReturnType<typeof setInterval> | null = null;
  let lastWrite = Date.now();
  return new ReadableStream<Uint8Array>({
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
          }
        });
    },
    cancel() {
      closed = true;
      if (timer) clearInterval(timer);
      opts.onCancel();
    },
  });
}
