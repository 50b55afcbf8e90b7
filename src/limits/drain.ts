/**
 * Graceful stop (docs/operate.md, "Stopping and readiness"): once stopping, new requests are refused with
 * 503 (the listener stays open, so probes and load balancers see it), the requests in flight are
 * counted down, and when the grace period runs out the streams still open are cut: each ends with
 * its protocol's error event and is not billed (docs/money.md: a stream ending in an error is
 * never charged).
 */
import { DomainError } from "../errors";

/** The answer to a request that arrives while the server is stopping. */
export const serverStopping = () =>
  new DomainError(
    "unavailable",
    "service_unavailable",
    "The server is stopping and takes no new requests. Nothing was billed; please retry (another instance will answer).",
    null,
    1,
  );

/** What a stream still open when the grace period ran out is told, in its protocol's error event. */
export const streamCutByStop = (holdVoided: boolean) =>
  new DomainError(
    "unavailable",
    "service_unavailable",
    holdVoided
      ? "The server stopped before this stream finished. This request was not billed; please retry."
      : "The server stopped before this stream finished. Please retry.",
    null,
    1,
  );

export class Drain {
  private isStopping = false;
  private open = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly cuts = new Set<() => void>();

  get stopping(): boolean {
    return this.isStopping;
  }

  /** Requests begun and not yet ended (streams until their last byte). */
  get inFlight(): number {
    return this.open;
  }

  /** Streams that would be cut now. */
  get openStreams(): number {
    return this.cuts.size;
  }

  begin(): void {
    this.open++;
  }

  end(): void {
    this.open = Math.max(0, this.open - 1);
    if (this.open === 0) this.wake();
  }

  /** From now on the server is stopping: readiness is 503 and new requests are refused. */
  beginStopping(): void {
    this.isStopping = true;
  }

  /** Resolves true once nothing is in flight, or false after `ms` (whichever comes first). */
  idle(ms: number): Promise<boolean> {
    if (this.open === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idleWaiters = this.idleWaiters.filter((w) => w !== done);
        resolve(false);
      }, ms);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.idleWaiters.push(done);
    });
  }

  /** A stream in flight: `cut` ends it early (error event, not billed). Returns its unregistration. */
  onCut(cut: () => void): () => void {
    this.cuts.add(cut);
    return () => this.cuts.delete(cut);
  }

  /** Cuts every open stream; how many. */
  cutAll(): number {
    const cuts = [...this.cuts];
    this.cuts.clear();
    for (const cut of cuts) cut();
    return cuts.length;
  }

  private wake(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
