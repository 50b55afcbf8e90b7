/**
 * A streamed request's overall deadline (SWITCHYARD_STREAM_MAX_SECONDS): the idle timeout alone
 * lets an upstream that keeps sending a little keep a stream — its hold and its concurrency slot —
 * forever. Once the deadline passes, `onReached` runs (the stream stops its upstream, so a read
 * waiting on it returns) and `reached` stays true; the stream then ends as `length`.
 */
export class StreamDeadline {
  private timer: ReturnType<typeof setTimeout> | null;
  private hit = false;

  constructor(ms: number, onReached: () => void) {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.hit = true;
      onReached();
    }, ms);
    // A stream is kept alive by its connections, never by its deadline.
    this.timer.unref?.();
  }

  get reached(): boolean {
    return this.hit;
  }

  /** The stream ended first. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
