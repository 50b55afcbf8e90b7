/**
 * Collects the young generation of this thread's heap every so much work that leaves short-lived
 * garbage behind (bytes relayed, characters counted), instead of when the heap's own policy
 * decides. Relaying a stream decodes, parses, rewrites and re-encodes every upstream read, and
 * counting its tokens copies each part into the counting worker: a few times the stream's bytes in
 * strings and buffers that die within a read. Left to the default policy, 40 concurrent streams'
 * garbage peaked at ~3 MB of RSS per stream (test/bench/stream-memory.bench.ts; docs/architecture.md,
 * "Memory per stream").
 *
 * The collection runs on the next turn of the event loop, not where the work is counted: there the
 * read or part just handled is still referenced, and a collection would promote it to the old
 * generation, which only a full collection frees. An eden collection looks only at what was
 * allocated since the last one: 0.1–1 ms here. `collect` may be a full collection instead, for
 * garbage that lives long enough to be promoted (the counting worker's parts, counted over many
 * turns): ~10 ms in the counting worker, too slow for the serving thread (10–30 ms there, with
 * the event loop stopped).
 */
import { edenGC } from "bun:jsc";

export class YoungGarbage {
  private since = 0;
  private scheduled = false;

  constructor(
    /** Work (in the caller's unit) between collections. */
    readonly every: number,
    private readonly collect: () => unknown = edenGC,
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
 * Frees an ArrayBuffer's memory now, not when a collection finds it dead (detaching it: every
 * view of it reads as empty from then on). For buffers a relay made or read for itself and is done
 * with: one that waited for a client has usually been promoted by then, and only a full collection
 * would free it.
 */
export function freeNow(buffer: ArrayBufferLike): void {
  (buffer as ArrayBuffer & { transfer?(length: number): ArrayBuffer }).transfer?.(0);
}
