import { describe, expect, test } from "bun:test";
import { idleGuardedReader, IdleTimeout, MAX_READ_BYTES } from "./idle-reader";
import { readAllText } from "./body";

const bytes = (s: string) => new TextEncoder().encode(s);

/** A source whose chunks the test pushes by hand, noting whether it was cancelled. */
function source() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => void (cancelled = true),
  });
  return { reader: stream.getReader(), controller, get cancelled() { return cancelled; } };
}

function hooks() {
  const seen: string[] = [];
  return { seen, onIdle: () => seen.push("idle"), onBroken: () => seen.push("broken") };
}

describe("idleGuardedReader", () => {
  test("returns the first chunk, then relays the rest and the end", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(bytes("a"), src.reader, 1000, h);
    src.controller.enqueue(bytes("b"));
    src.controller.close();
    expect(await readAllText(body)).toBe("ab");
    expect(h.seen).toEqual([]);
  });

  test("pauses shorter than the idle deadline are fine, however many", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(null, src.reader, 40, h);
    const text = readAllText(body);
    for (const c of ["x", "y", "z"]) {
      await Bun.sleep(25);
      src.controller.enqueue(bytes(c));
    }
    src.controller.close();
    expect(await text).toBe("xyz");
    expect(h.seen).toEqual([]);
  });

  test("a read waiting past the deadline fails with IdleTimeout, once, and cancels the upstream", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(bytes("a"), src.reader, 20, h);
    expect((await body.read()).value).toEqual(bytes("a"));
    const stalled = body.read();
    await Bun.sleep(5);
    expect(h.seen).toEqual([]);
    await expect(stalled).rejects.toBeInstanceOf(IdleTimeout);
    expect(h.seen).toEqual(["idle"]);
    expect(src.cancelled).toBe(true);
    await expect(body.read()).rejects.toBeInstanceOf(IdleTimeout);
    expect(h.seen).toEqual(["idle"]);
  });

  test("a broken upstream body is reported as broken, not idle", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(null, src.reader, 1000, h);
    const read = body.read();
    src.controller.error(new Error("reset"));
    await expect(read).rejects.toThrow("reset");
    expect(h.seen).toEqual(["broken"]);
  });

  test("a large read is handed out in pieces, and what is left of it stops holding the whole read", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(null, src.reader, 1000, h);
    const read = new Uint8Array(512 * 1024).map((_, i) => i % 251);
    src.controller.enqueue(read);
    const pieces: Uint8Array[] = [];
    while (pieces.length * MAX_READ_BYTES < read.byteLength) {
      const r = await body.read();
      expect(r.done).toBe(false);
      pieces.push(r.value!.slice());
      // Every piece is a view of at most twice what is still to come (plus the piece itself):
      // a relay that stops here for a slow client holds no more than that of this read.
      const left = read.byteLength - pieces.length * MAX_READ_BYTES;
      expect(r.value!.buffer.byteLength).toBeLessThanOrEqual(2 * (left + MAX_READ_BYTES));
    }
    expect(Math.max(...pieces.map((p) => p.byteLength))).toBe(MAX_READ_BYTES);
    expect(Buffer.concat(pieces).equals(Buffer.from(read))).toBe(true);
    src.controller.close();
    expect((await body.read()).done).toBe(true);
  });

  test("read transiently, a large read of its own is handed out in pieces and freed once all of it was taken", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(null, src.reader, 1000, h);
    const read = new Uint8Array(256 * 1024).map((_, i) => i % 251);
    const expected = Buffer.from(read);
    // A view into a buffer that holds other bytes too is never freed.
    const shared = new Uint8Array(128 * 1024).fill(7);
    src.controller.enqueue(read);
    src.controller.enqueue(shared.subarray(1));
    const pieces: Uint8Array[] = [];
    while (pieces.length * MAX_READ_BYTES < read.byteLength) {
      const r = await body.readTransient();
      // Until all of it was handed out, the read is whole; no copy of its rest is made.
      expect(read.byteLength).toBe(256 * 1024);
      expect(r.value!.buffer).toBe(read.buffer);
      pieces.push(r.value!.slice());
    }
    expect(Buffer.concat(pieces).equals(expected)).toBe(true);
    // The next read frees it: its memory goes back at once, not at the next full collection.
    const next = await body.readTransient();
    expect(read.buffer.byteLength).toBe(0);
    expect(next.value!.byteLength).toBe(MAX_READ_BYTES);
    for (let got = next.value!.byteLength; got < shared.byteLength - 1; ) got += (await body.readTransient()).value!.byteLength;
    src.controller.close();
    expect((await body.readTransient()).done).toBe(true);
    expect(shared.byteLength).toBe(128 * 1024);
  });

  test("from a body that owns its reads, every read's buffer is freed once handed out, views and small reads too", async () => {
    const src = source();
    const owning = Object.assign(src.reader, { ownsReads: true as const });
    const body = idleGuardedReader(null, owning, 1000, hooks());
    // A socket read whose data starts after a response head (a view), and a small one.
    const first = new Uint8Array(40 * 1024).fill(3);
    const small = new Uint8Array(2 * 1024).fill(4);
    src.controller.enqueue(first.subarray(100));
    src.controller.enqueue(small);
    let got = 0;
    while (got < first.byteLength - 100) got += (await body.readTransient()).value!.byteLength;
    const last = await body.readTransient();
    expect(first.buffer.byteLength).toBe(0);
    expect(last.value!.byteLength).toBe(2 * 1024);
    src.controller.close();
    expect((await body.readTransient()).done).toBe(true);
    expect(small.buffer.byteLength).toBe(0);
  });

  test("read plainly, nothing is ever freed (the reader may keep what it read)", async () => {
    const src = source();
    const body = idleGuardedReader(null, src.reader, 1000, hooks());
    const read = new Uint8Array(256 * 1024).fill(1);
    src.controller.enqueue(read);
    src.controller.close();
    expect((await readAllText(body)).length).toBe(256 * 1024);
    expect(read.byteLength).toBe(256 * 1024);
  });

  test("cancel stops the upstream body and the deadline", async () => {
    const src = source();
    const h = hooks();
    const body = idleGuardedReader(null, src.reader, 20, h);
    await body.cancel();
    await Bun.sleep(40);
    expect(src.cancelled).toBe(true);
    expect(h.seen).toEqual([]);
  });
});
