/**
 * The idle deadline between an upstream body's chunks, which errors the body instead of letting
 * it hang (the connect deadline is the client's, client.ts), and the relay's reads of a body: in
 * pieces of at most MAX_READ_BYTES, each read's buffer freed once handed out (readTransient).
 */
import type { Body, ReadResult } from "./body";
import { freeNow } from "../../runtime/memory";

export class IdleTimeout extends Error {}

/**
 * The most one read hands out. After a pause the socket may return megabytes at once; a relay
 * that waits for its client between reads then holds at most this much (and its parsed chunks),
 * and the tally must keep the text of about two such reads (tokens/token-tally.ts, KEEP_CHARS).
 */
export const MAX_READ_BYTES = 8 * 1024;

/** An upstream body that a relay reads and lets go of as it goes (see readTransient). */
export interface GuardedBody extends Body {
  /**
   * Like read(), but what it hands out is valid only until the next call (or cancel): a buffer the
   * upstream's bytes arrived in is freed as soon as all of it was handed out, at once, not when
   * the garbage collector gets to it. A relay's reads wait for its client long enough to outlive
   * young collections, and each left its buffer (up to a socket read) for the next full one.
   */
  readTransient(): Promise<ReadResult>;
}

/**
 * Buffers at least this large, read whole from the upstream, are freed by readTransient; from a
 * body that owns its reads (exchange.ts), every read's buffer is.
 */
const FREED_BYTES = 64 * 1024;

/**
 * A body reader that returns `first` (already read) and then relays `reader` in pieces of at
 * most MAX_READ_BYTES, rejecting with IdleTimeout when a read waits longer than `idleMs` (`onIdle` stops the upstream request);
 * `onBroken` hears of any other read error. Cancelling it cancels the upstream body at once.
 *
 * One timer per body, re-armed (refresh) when a read starts waiting and ignored once it returns;
 * each read is the upstream read itself with one then() after it: no timer, race or wrapping
 * promise per chunk. A stalled read ends because the deadline cancels the upstream body (and
 * `onIdle` aborts its request), which settles the waiting read; it then fails with IdleTimeout.
 */
export function idleGuardedReader(
  first: Uint8Array | null,
  reader: Body,
  idleMs: number,
  hooks: { onIdle(): void; onBroken(): void },
): GuardedBody {
  /** Bytes read from the upstream and not yet handed out. */
  let pending: Uint8Array | null = null;
  /**
   * The buffer `pending` is a view of, when it is a large one of its own (an upstream read, or the
   * chunks of one joined): freed by readTransient once handed out. Views of anything else (a
   * buffer that may hold other bytes) are never freed.
   */
  let own: ArrayBufferLike | null = null;
  const owned = (bytes: Uint8Array) =>
    reader.ownsReads === true || (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.byteLength >= FREED_BYTES);
  /** Handed out whole by the last transient read: freed on the next. */
  let spent: ArrayBufferLike | null = null;
  let transient = false;
  const hold = (bytes: Uint8Array | null) => {
    pending = bytes;
    own = bytes !== null && owned(bytes) ? bytes.buffer : null;
  };
  hold(first);
  /** Hands out at most MAX_READ_BYTES of `pending`, keeping the rest for the next read. */
  const take = (): Uint8Array => {
    const all = pending!;
    if (all.byteLength <= MAX_READ_BYTES) {
      pending = null;
      if (transient) spent = own;
      own = null;
      return all;
    }
    const rest = all.subarray(MAX_READ_BYTES);
    if (transient && own !== null) {
      // Freed whole once handed out: nothing to copy.
      pending = rest;
      return all.subarray(0, MAX_READ_BYTES);
    }
    // Once most of a large read is handed out, the rest is copied out of it, so that a relay
    // waiting for a slow client holds the bytes it has yet to hand out, not the whole read (a
    // socket read can return 512 KiB at once). Each byte is copied at most once on average.
    if (rest.byteLength * 2 < rest.buffer.byteLength) hold(rest.slice());
    else pending = rest;
    return all.subarray(0, MAX_READ_BYTES);
  };
  /** A read is waiting on the upstream (the timer only matters then). */
  let waiting = false;
  /** Set once the body stalled: every read from then on fails with IdleTimeout. */
  let stalled = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const idle = () => new IdleTimeout(`no data for ${idleMs} ms`);
  const onTimer = () => {
    if (!waiting || stalled) return;
    stalled = true;
    hooks.onIdle();
    reader.cancel().catch(() => {});
  };
  const disarm = () => {
    waiting = false;
    if (timer) clearTimeout(timer);
    timer = null;
  };
  const onRead = (r: ReadResult): ReadResult => {
    waiting = false;
    if (stalled) throw idle();
    if (r.done) {
      disarm();
      return { done: true };
    }
    hold(r.value!);
    return { done: false, value: take() };
  };
  const onError = (err: unknown): never => {
    waiting = false;
    if (stalled) throw idle();
    disarm();
    hooks.onBroken();
    throw err;
  };
  const read = (): Promise<ReadResult> => {
    if (pending) return Promise.resolve({ done: false, value: take() });
    if (stalled) return Promise.reject(idle());
    waiting = true;
    if (timer) timer.refresh();
    else timer = setTimeout(onTimer, idleMs);
    return reader.read().then(onRead, onError);
  };
  return {
    read() {
      transient = false;
      return read();
    },
    readTransient() {
      if (spent !== null) freeNow(spent);
      spent = null;
      transient = true;
      return read();
    },
    cancel(reason) {
      disarm();
      pending = null;
      own = spent = null;
      return reader.cancel(reason).catch(() => {});
    },
  };
}
