/**
 * Memory handling that leans on the runtime. Every place the product relies on behaviour of Bun
 * or JavaScriptCore that their documentation does not promise goes through this module, and
 * memory.test.ts checks each such behaviour, so that a Bun upgrade is reviewed here, once:
 *
 * 1. `ArrayBuffer.prototype.transfer(0)` detaches a buffer and frees its memory at once, whether
 *    or not the buffer object is still referenced; every view of it reads as empty from then on
 *    (freeNow).
 * 2. `edenGC` and `fullGC` of bun:jsc exist: a young (eden) collection frees garbage made since
 *    the last collection; a full one (or Bun.gc(true)) frees all garbage. Garbage that outlived a
 *    young collection (promoted) may wait for a full one, which JavaScriptCore runs only once the
 *    heap has grown a good deal: why buffers that waited for a client are freed by hand (1), and
 *    why full collections are paced where such garbage piles up (GcPacer with collectFull or
 *    collectFullAndTrim).
 * 3. A Bun TCP socket exposes its descriptor as `fd` (not in Bun's types), and setsockopt(2)
 *    called through bun:ffi on it sets the kernel receive buffer (capReceiveBuffer).
 * 4. Each `data` chunk of a Bun TCP socket is an ArrayBuffer of its own that Bun does not reuse
 *    after the handler returns: the upstream client keeps chunks, moves bytes within them and
 *    frees them once read (upstream/http1/exchange.ts, idle-reader.ts).
 * 5. Bun's server asks a response's pull stream for its next chunk only once it has written or
 *    copied the last one, so that chunk may be freed at the next pull (metering/producer-stream.ts).
 *
 * Why the relay frees and collects by hand at all: docs/architecture.md, "Memory per stream".
 */
import { edenGC, fullGC } from "bun:jsc";

/**
 * Frees an ArrayBuffer's memory now, not when a collection finds it dead (detaching it: every view
 * of it reads as empty from then on). For buffers the caller made or read for itself and is done
 * with: one that waited for a client has usually been promoted by then, and only a full
 * collection would free it. Only for a buffer nothing else reads.
 */
export function freeNow(buffer: ArrayBufferLike): void {
  (buffer as ArrayBuffer & { transfer?(length: number): ArrayBuffer }).transfer?.(0);
}

/** A young-generation collection of this thread's heap: 0.1–1 ms on the serving thread. */
export function collectYoung(): void {
  edenGC();
}

/**
 * JavaScriptCore's own full collection of this thread's heap, not Bun.gc(true), which also sweeps
 * and trims the allocators: about a third of the pause (10–30 ms on the serving thread).
 */
export function collectFull(): void {
  fullGC();
}

/** A full collection that also sweeps and trims the allocators (Bun.gc(true)): for worker threads. */
export function collectFullAndTrim(): void {
  Bun.gc(true);
}

/**
 * Runs a collection every so much work that leaves short-lived garbage behind (bytes relayed,
 * characters counted), instead of when the heap's own policy decides. Relaying a stream decodes,
 * parses, rewrites and re-encodes every upstream read, and counting its tokens copies each part
 * into the counting worker: a few times the stream's bytes in strings and buffers that die within
 * a read. Left to the default policy, 40 concurrent streams' garbage peaked at ~3 MB of RSS per
 * stream (test/bench/stream-memory.bench.ts).
 *
 * The collection runs on the next turn of the event loop, not where the work is counted: there the
 * read or part just handled is still referenced, and a collection would promote it to the old
 * generation, which only a full collection frees. The default is a young collection; `collect`
 * may be a full one, for garbage that lives long enough to be promoted (the counting worker's
 * parts, counted over many turns: ~10 ms there, too slow for the serving thread).
 */
export class GcPacer {
  private since = 0;
  private scheduled = false;

  constructor(
    /** Work (in the caller's unit) between collections. */
    readonly every: number,
    private readonly collect: () => void = collectYoung,
    private readonly later: (run: () => void) => void = (run) => setImmediate(run),
  ) {}

  /** `amount` more work done: a collection follows once `every` has been done since the last one. */
  made(amount: number): void {
    this.since += amount;
    if (this.since < this.every || this.scheduled) return;
    this.scheduled = true;
    this.later(() => {
      // It takes the garbage of the work done until now.
      this.since = 0;
      this.scheduled = false;
      this.collect();
    });
  }
}

/**
 * A cap on the kernel's receive buffer of an upstream socket (SO_RCVBUF). While a relay waits for
 * a slow client its upstream socket is paused, and the kernel keeps taking the upstream's bytes
 * into that buffer, which Linux grows to megabytes for a fast sender; once resumed, one socket read
 * hands the process all of it at once (Bun reads up to ~1 MB): a fast upstream cost each stream
 * about that much at its peak (test/bench/stream-memory.bench.ts). Capped, the kernel holds at
 * most about twice the cap, so each read brings at most that much, and TCP's window stalls the
 * upstream instead.
 *
 * Set through setsockopt(2) with bun:ffi on Linux with glibc; elsewhere (or if the socket has no
 * descriptor) nothing changes.
 */
const SOL_SOCKET = 1;
const SO_RCVBUF = 8;

type SetSockOpt = (fd: number, level: number, name: number, value: Int32Array, size: number) => number;
let setsockopt: SetSockOpt | null | undefined;

function loadSetsockopt(): SetSockOpt | null {
  try {
    const { dlopen, FFIType, ptr } = require("bun:ffi") as typeof import("bun:ffi");
    const libc = dlopen("libc.so.6", { setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 } });
    return (fd, level, name, value, size) => libc.symbols.setsockopt(fd, level, name, ptr(value), size) as number;
  } catch {
    return null;
  }
}

/**
 * Caps the socket's receive buffer at `bytes` (0: leaves the system's own, autotuned); says whether
 * the cap was set.
 */
export function capReceiveBuffer(socket: object, bytes: number): boolean {
  const fd = (socket as { fd?: unknown }).fd;
  if (bytes <= 0 || typeof fd !== "number" || fd < 0) return false;
  if (setsockopt === undefined) setsockopt = process.platform === "linux" ? loadSetsockopt() : null;
  if (setsockopt === null) return false;
  try {
    return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, new Int32Array([bytes]), 4) === 0;
  } catch {
    return false;
  }
}
