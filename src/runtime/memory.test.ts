/**
 * One test for each runtime behaviour memory.ts relies on (numbered as in its header). A Bun
 * upgrade that changes one fails here, by name, before it shows as a leak, a corrupt relay or a
 * memory figure gone wrong.
 */
import { describe, expect, test } from "bun:test";
import { heapStats } from "bun:jsc";
import { capReceiveBuffer, collectFull, collectFullAndTrim, collectYoung, freeNow, GcPacer } from "./memory";
import { readLate } from "../../test/support/late-reader";

const MiB = 1024 * 1024;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("1. freeNow: ArrayBuffer.prototype.transfer(0) detaches and frees", () => {
  test("every view of the buffer reads as empty from then on", () => {
    expect(typeof (ArrayBuffer.prototype as { transfer?: unknown }).transfer).toBe("function");
    const buffer = new ArrayBuffer(4096);
    const whole = new Uint8Array(buffer).fill(7);
    const part = Buffer.from(buffer, 1024, 1024);
    freeNow(buffer);
    expect(buffer.byteLength).toBe(0);
    expect(whole.byteLength).toBe(0);
    expect(part.byteLength).toBe(0);
    expect(whole[0]).toBeUndefined();
  });

  test("its memory is freed though the buffer object is still referenced", () => {
    const kept = new ArrayBuffer(64 * MiB);
    new Uint8Array(kept).fill(1);
    collectFullAndTrim();
    const before = process.memoryUsage().arrayBuffers;
    freeNow(kept);
    // A collection cannot free `kept` (it is read below): only detaching can have freed its memory.
    collectFullAndTrim();
    const after = process.memoryUsage().arrayBuffers;
    expect(before - after).toBeGreaterThanOrEqual(60 * MiB);
    expect(kept.byteLength).toBe(0);
  });
});

describe("2. collections (bun:jsc edenGC and fullGC, Bun.gc)", () => {
  const COUNT = 5_000;
  /** Live cells of a type nothing else here makes (counted by walking the heap). */
  const cells = () => (heapStats().objectTypeCounts as Record<string, number>).Int16Array ?? 0;
  /** Makes COUNT small objects, garbage at once. */
  function make(): void {
    for (let i = 0; i < COUNT; i++) new Int16Array(1);
  }

  test("a young collection frees garbage made since the last collection", () => {
    collectFull();
    const base = cells();
    make();
    expect(cells()).toBeGreaterThanOrEqual(base + COUNT * 0.9);
    collectYoung();
    expect(cells()).toBeLessThanOrEqual(base + COUNT / 100);
  });

  /**
   * Makes COUNT objects that outlive a young collection, then drops them: held in small groups and
   * let go of group by group, so that a stale pointer the collector finds on the stack (it scans
   * it conservatively) can keep one group alive at most.
   */
  function survivors(): void {
    const groups: unknown[][] = [];
    for (let g = 0; g < 50; g++) {
      const group: unknown[] = [];
      for (let i = 0; i < COUNT / 50; i++) group.push(new Int16Array(1));
      groups.push(group);
    }
    collectYoung();
    groups.length = 0;
  }

  for (const [name, full] of [["fullGC", collectFull], ["Bun.gc(true)", collectFullAndTrim]] as const) {
    test(`${name} frees garbage, what outlived a young collection too`, async () => {
      collectFull();
      const base = cells();
      survivors();
      make();
      expect(cells()).toBeGreaterThanOrEqual(base + COUNT * 0.9);
      // On a later turn, so that no stale pointer on this stack holds the dropped objects.
      await nextTurn();
      full();
      expect(cells()).toBeLessThanOrEqual(base + COUNT / 10);
    });
  }
});

describe("GcPacer", () => {
  test("collects once per `every` units of work, on a later turn, never twice at once", () => {
    let collections = 0;
    const queued: (() => void)[] = [];
    const g = new GcPacer(256, () => void collections++, (run) => queued.push(run));
    for (let i = 0; i < 255; i++) g.made(1);
    expect(queued.length).toBe(0);
    g.made(1);
    // Scheduled, not run where the work was counted.
    expect(queued.length).toBe(1);
    expect(collections).toBe(0);
    // More work before it ran does not queue a second one.
    g.made(1000);
    expect(queued.length).toBe(1);
    queued.shift()!();
    expect(collections).toBe(1);
    g.made(255);
    expect(queued.length).toBe(0);
    g.made(1);
    expect(queued.length).toBe(1);
    queued.shift()!();
    expect(collections).toBe(2);
  });

  test("by default a young collection runs, on the next turn of the event loop", async () => {
    collectFull();
    const base = heapStats().objectTypeCounts as Record<string, number>;
    for (let i = 0; i < 1000; i++) new Float64Array(1);
    const g = new GcPacer(1);
    g.made(1);
    const made = heapStats().objectTypeCounts as Record<string, number>;
    expect(made.Float64Array ?? 0).toBeGreaterThanOrEqual((base.Float64Array ?? 0) + 900);
    await nextTurn();
    await nextTurn();
    expect((heapStats().objectTypeCounts as Record<string, number>).Float64Array ?? 0).toBeLessThanOrEqual((base.Float64Array ?? 0) + 10);
  });
});

describe("3. capReceiveBuffer: bun:ffi setsockopt on a Bun socket's fd", () => {
  test.skipIf(process.platform !== "linux")("a Bun TCP socket has its descriptor as fd, and the kernel then reports the cap", async () => {
    const { dlopen, FFIType, ptr } = await import("bun:ffi");
    const libc = dlopen("libc.so.6", { getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 } });
    const receiveBuffer = (fd: number) => {
      const value = new Int32Array(1);
      const length = new Uint32Array([4]);
      expect(libc.symbols.getsockopt(fd, 1 /* SOL_SOCKET */, 8 /* SO_RCVBUF */, ptr(value), ptr(length))).toBe(0);
      return value[0]!;
    };
    const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const socket = await Bun.connect({ hostname: "127.0.0.1", port: server.port, socket: { data() {} } });
    try {
      const fd = (socket as unknown as { fd: unknown }).fd;
      expect(typeof fd).toBe("number");
      expect(fd as number).toBeGreaterThanOrEqual(0);
      expect(capReceiveBuffer(socket, 16 * 1024)).toBe(true);
      // Linux doubles what it is asked for, for its own bookkeeping (socket(7)).
      expect(receiveBuffer(fd as number)).toBe(32 * 1024);
    } finally {
      socket.end();
      server.stop(true);
      libc.close();
    }
  });

  test("without a cap, or without a descriptor, nothing is set", () => {
    expect(capReceiveBuffer({ fd: 3 }, 0)).toBe(false);
    expect(capReceiveBuffer({}, 64 * 1024)).toBe(false);
    expect(capReceiveBuffer({ fd: -1 }, 64 * 1024)).toBe(false);
  });
});

test("4. each data chunk of a Bun TCP socket is an ArrayBuffer of its own, intact after its handler", async () => {
  const sent: Buffer[] = [];
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(s) {
        for (let i = 0; i < 40; i++) {
          const piece = Buffer.alloc(500 + 193 * i, i);
          sent.push(piece.subarray(0, Math.max(0, s.write(piece))));
          await Bun.sleep(1);
        }
        s.end();
      },
      data() {},
    },
  });
  const got: Uint8Array[] = [];
  let closed!: () => void;
  const ended = new Promise<void>((resolve) => (closed = resolve));
  await Bun.connect({ hostname: "127.0.0.1", port: server.port, socket: { data: (_s, chunk) => void got.push(chunk), close: () => closed() } });
  try {
    await ended;
    expect(got.length).toBeGreaterThan(1);
    for (const chunk of got) {
      expect(chunk.byteOffset).toBe(0);
      expect(chunk.byteLength).toBe(chunk.buffer.byteLength);
    }
    expect(new Set(got.map((c) => c.buffer)).size).toBe(got.length);
    // Read after every handler returned: none was overwritten by a later read.
    expect(Buffer.concat(got).equals(Buffer.concat(sent))).toBe(true);
  } finally {
    server.stop(true);
  }
});

test("5. Bun's server pulls a stream's next chunk only once done with the last: freeing that one then loses no byte", async () => {
  const CHUNKS = 96;
  const SIZE = 64 * 1024;
  const made: Uint8Array[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () =>
      new Response(
        new ReadableStream<Uint8Array>(
          {
            pull(c) {
              if (made.length > 0) freeNow(made[made.length - 1]!.buffer);
              if (made.length === CHUNKS) return c.close();
              const chunk = new Uint8Array(SIZE).fill(made.length);
              made.push(chunk);
              c.enqueue(chunk);
            },
          },
          { highWaterMark: 0 },
        ),
      ),
  });
  try {
    // The client reads late: the socket's buffers fill, and the server keeps what they do not take.
    const body = await readLate(`http://127.0.0.1:${server.port}/`);
    expect(body.byteLength).toBe(CHUNKS * SIZE);
    expect(body.equals(Buffer.concat(Array.from({ length: CHUNKS }, (_, i) => Buffer.alloc(SIZE, i))))).toBe(true);
    expect(made.every((chunk) => chunk.byteLength === 0)).toBe(true);
  } finally {
    server.stop(true);
  }
});
