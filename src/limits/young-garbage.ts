/**
 * Collects the young generation of this thread's heap every so much work that leaves short-lived
 * garbage behind (bytes relayed, characters counted), instead of when the heap's own policy
 * decides. Relaying a stream decodes, parses, rewrites and re-encodes every upstream read, and
 * counting its tokens copies each part into the counting worker: a few times the stream's bytes in
 * strings and buffers that die within a read. Left to the default policy, 40 concurrent streams'
 * garbage peaked at ~3 MB of RSS per stream; with an eden collection every 256 KiB relayed and
 * every 64 Ki characters counted, ~2 MB (test/bench/stream-memory.bench.ts; docs/architecture.md,
 * "Memory per stream"). An eden collection looks only at what was allocated since the last one:
 * 0.1–1 ms here, a small share of the work that made the garbage; a full collection (which in the
 * counting worker walks the tokenizer's tables) would cost far more.
 */
import { edenGC } from "bun:jsc";

export class YoungGarbage {
  private since = 0;

  constructor(
    /** Work (in the caller's unit) between collections. */
    readonly every: number,
    private readonly collect: () => unknown = edenGC,
  ) {}

  /** `amount` more work done: collects the young generation once `every` has been done since the last time. */
  made(amount: number): void {
    this.since += amount;
    if (this.since < this.every) return;
    this.since = 0;
    this.collect();
  }
}
