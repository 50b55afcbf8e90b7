/**
 * The two timeouts fetch cannot express: a connect deadline (Bun's fetch has none apart from the
 * whole request) and an idle deadline between body chunks that errors the stream instead of
 * letting it hang.
 */

/** Origins that answered recently: a pooled connection is likely, so no connect probe is needed. */
const reachableAt = new Map<string, number>();
const REACHABLE_FOR_MS = 10_000;

export function markReachable(origin: string, now = Date.now()): void {
  reachableAt.set(origin, now);
}

export function recentlyReachable(origin: string, now = Date.now()): boolean {
  const t = reachableAt.get(origin);
  return t !== undefined && now - t < REACHABLE_FOR_MS;
}

/**
 * Opens (and at once closes) a TCP connection to the origin, racing the real request: resolves
 * true when connected, false when `timeoutMs` passed first. A refused connection resolves true;
 * fetch reports that itself, faster and more precisely.
 */
export function probeConnect(origin: string, timeoutMs: number): Promise<boolean> {
  const u = new URL(origin);
  const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
  const hostname = u.hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    Bun.connect({
      hostname,
      port,
      socket: {
        open(sock) {
          sock.end();
        },
        data() {},
        error() {},
        connectError() {},
      },
    }).then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(true);
      },
    );
  });
}

export class IdleTimeout extends Error {}

/**
 * A body stream that starts with `first` (already read) and then relays `reader`, erroring with
 * IdleTimeout when a read waits longer than `idleMs` (`onIdle` stops the upstream request);
 * `onBroken` hears of any other read error.
 * Cancelling the result cancels the upstream body at once.
 */
export function idleGuardedBody(
  first: Uint8Array | null,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  idleMs: number,
  hooks: { onIdle(): void; onBroken(): void },
): ReadableStream<Uint8Array> {
  let pending: Uint8Array | null = first;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending) {
        controller.enqueue(pending);
        pending = null;
        return;
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stalled = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new IdleTimeout(`no data for ${idleMs} ms`)), idleMs);
      });
      try {
        const r = await Promise.race([reader.read(), stalled]);
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      } catch (err) {
        if (err instanceof IdleTimeout) {
          hooks.onIdle();
          reader.cancel().catch(() => {});
        } else hooks.onBroken();
        controller.error(err);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason) {
      return reader.cancel(reason).catch(() => {});
    },
  }, { highWaterMark: 0 });
}
