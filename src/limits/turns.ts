/**
 * One at a time per key, first come first served: `take(key)` resolves when it is the caller's
 * turn, with a release function (idempotent). A waiter whose signal aborts leaves the line
 * without taking a turn. Keys with nobody holding or waiting cost no memory.
 *
 * Used for large request bodies: reading and parsing 8 MB of JSON takes the event loop ~10–20 ms
 * (plus the garbage it leaves), so an account's large bodies are parsed one after another, and
 * other requests wait behind at most one of them instead of all it sends at once.
 */
export class TakeTurns {
  private readonly lines = new Map<string, (() => void)[]>();

  /** Resolves with a release function once it is this caller's turn; rejects if `signal` aborts first. */
  take(key: string, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error("aborted"));
    const line = this.lines.get(key);
    if (!line) {
      this.lines.set(key, []);
      return Promise.resolve(this.releaser(key));
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        signal?.removeEventListener("abort", leave);
        resolve(this.releaser(key));
      };
      const leave = () => {
        const i = line.indexOf(go);
        if (i >= 0) line.splice(i, 1);
        reject(signal!.reason ?? new Error("aborted"));
      };
      line.push(go);
      signal?.addEventListener("abort", leave, { once: true });
    });
  }

  /** Holders and waiters of `key` (for tests and metrics). */
  queued(key: string): number {
    const line = this.lines.get(key);
    return line ? line.length + 1 : 0;
  }

  private releaser(key: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const line = this.lines.get(key);
      const next = line?.shift();
      if (next) next();
      else this.lines.delete(key);
    };
  }
}
