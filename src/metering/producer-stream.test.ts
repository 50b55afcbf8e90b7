import { describe, expect, test } from "bun:test";
import { producerStream, watchProducerEnd, type StreamEnd, type StreamWriter } from "./producer-stream";
import { activePeriods } from "./shared-ticker";
import { readLate } from "../../test/support/late-reader";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("watchProducerEnd", () => {
  test("hears 'completed' once, after the producer finished, and the body is intact", async () => {
    const outcomes: StreamEnd[] = [];
    const body = producerStream({ onCancel() {}, async produce(w) { w.write(bytes("a")); await Bun.sleep(1); w.write(bytes("b")); } });
    expect(watchProducerEnd(body, (o) => outcomes.push(o))).toBe(true);
    expect(outcomes).toEqual([]);
    expect(await new Response(body).text()).toBe("ab");
    expect(outcomes).toEqual(["completed"]);
  });

  test("hears 'cancelled' when the reader goes away, and the producer is told", async () => {
    const outcomes: StreamEnd[] = [];
    let cancelled = 0;
    const body = producerStream({ onCancel: () => cancelled++, produce: () => new Promise(() => {}) });
    watchProducerEnd(body, (o) => outcomes.push(o));
    await body.cancel();
    await body.cancel();
    expect(outcomes).toEqual(["cancelled"]);
    expect(cancelled).toBe(1);
  });

  test("a watcher attached after the end hears it at once", async () => {
    const body = producerStream({ onCancel() {}, async produce() {} });
    expect(await new Response(body).text()).toBe("");
    const outcomes: StreamEnd[] = [];
    watchProducerEnd(body, (o) => outcomes.push(o));
    expect(outcomes).toEqual(["completed"]);
  });

  test("any other stream is not watched (the caller wraps it)", () => {
    const other = new ReadableStream<Uint8Array>();
    expect(watchProducerEnd(other, () => {})).toBe(false);
  });
});

describe("backpressure", () => {
  const kb = (n: number) => new Uint8Array(n * 1024).fill(97);

  test("ready() waits while the bytes queued for the client are above the high-water mark", async () => {
    let writer!: StreamWriter;
    const states: string[] = [];
    const body = producerStream({
      highWaterBytes: 8 * 1024,
      onCancel() {},
      async produce(w) {
        writer = w;
        for (let i = 0; i < 4; i++) {
          w.write(kb(6));
          await w.ready();
          states.push(`wrote ${i + 1}, taken ${w.taken / 1024} KiB`);
        }
      },
    });
    await Bun.sleep(20);
    // Nothing read yet: 6 KiB queued is below 8 KiB, 12 KiB is not; the producer waits there.
    expect(states).toEqual(["wrote 1, taken 0 KiB"]);
    const reader = body.getReader();
    let read = 0;
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      read += r.value.byteLength;
    }
    expect(read).toBe(24 * 1024);
    expect(writer.taken).toBe(24 * 1024);
    expect(states.length).toBe(4);
  });

  test("a client that takes nothing for the stall timeout is cut off: the transfer fails and the producer hears it", async () => {
    const reasons: string[] = [];
    const outcomes: StreamEnd[] = [];
    const body = producerStream({
      stallTimeoutMs: 100,
      onCancel: (reason) => reasons.push(reason),
      async produce(w) {
        w.write(kb(64));
        w.write(kb(64));
        await w.ready();
      },
    });
    watchProducerEnd(body, (o) => outcomes.push(o));
    const reader = body.getReader();
    expect((await reader.read()).value!.byteLength).toBe(64 * 1024);
    await Bun.sleep(300);
    expect(reasons).toEqual(["stalled"]);
    expect(outcomes).toEqual(["failed"]);
    await expect(reader.read()).rejects.toBeDefined();
  });

  test("a client that goes away is reported as gone, with what it took", async () => {
    let writer!: StreamWriter;
    const reasons: string[] = [];
    const body = producerStream({
      onCancel: (reason) => reasons.push(reason),
      async produce(w) {
        writer = w;
        w.write(kb(1));
        w.write(kb(2));
        await new Promise(() => {});
      },
    });
    const reader = body.getReader();
    await reader.read();
    await reader.cancel();
    expect(reasons).toEqual(["gone"]);
    expect(writer.taken).toBe(1024);
    expect(writer.closed).toBe(true);
  });
});

describe("owned chunks", () => {
  test("are freed once Bun's server has taken them, and a client that reads late still gets every byte", async () => {
    const owned: Uint8Array[] = [];
    // Not owned: a buffer the producer writes again and again, which must never be freed.
    const shared = new Uint8Array(4096).fill(255);
    const expected: number[] = [];
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(
          producerStream({
            onCancel() {},
            async produce(w) {
              for (let i = 0; i < 160; i++) {
                const chunk = new Uint8Array(64 * 1024).fill(i);
                owned.push(chunk);
                w.write(chunk, true);
                expected.push(i);
                if (i % 16 === 0) {
                  w.write(shared);
                  expected.push(255);
                }
                const room = w.ready();
                if (room) await room;
              }
            },
          }),
        ),
    });
    try {
      // The client reads nothing for a while: the socket's buffers fill and Bun's server buffers
      // what the socket does not take, from chunks that are freed meanwhile.
      const body = await readLate(`http://127.0.0.1:${server.port}/`);
      const want = Buffer.concat(expected.map((b) => new Uint8Array(b === 255 ? 4096 : 64 * 1024).fill(b)));
      expect(body.byteLength).toBe(want.byteLength);
      expect(body.equals(want)).toBe(true);
      // Every owned chunk but the last one or two (taken as the stream ended) was freed.
      expect(owned.filter((c) => c.byteLength === 0).length).toBeGreaterThanOrEqual(owned.length - 2);
      expect(shared.byteLength).toBe(4096);
    } finally {
      server.stop(true);
    }
  });

  test("a view of a larger buffer is never freed, even when written as owned", async () => {
    const backing = new Uint8Array(8192).fill(1);
    const body = producerStream({
      onCancel() {},
      async produce(w) {
        w.write(backing.subarray(0, 4096), true);
        await Bun.sleep(1);
        w.write(new Uint8Array(16).fill(2), true);
      },
    });
    expect((await new Response(body).arrayBuffer()).byteLength).toBe(4096 + 16);
    expect(backing.byteLength).toBe(8192);
  });
});

describe("timers", () => {
  test("heartbeat and stall checks share timers that are gone once the streams end, however they end", async () => {
    const before = activePeriods();
    const opts = { heartbeatMs: 15_000, stallTimeoutMs: 60_000 };
    const completed = producerStream({ ...opts, onCancel() {}, async produce(w) { w.write(bytes("a")); } });
    const cancelled = producerStream({ ...opts, onCancel() {}, produce: () => new Promise(() => {}) });
    const aborted = producerStream({ ...opts, onCancel() {}, async produce(w) { w.abort(); } });
    // Three streams, six checks, one timer: both kinds are checked every 5 s at these settings.
    expect(activePeriods()).toBe(before + 1);
    expect(await new Response(completed).text()).toBe("a");
    await cancelled.cancel();
    await new Response(aborted).text().catch(() => {});
    expect(activePeriods()).toBe(before);
  });

  test("a quiet stream gets a heartbeat comment", async () => {
    let writer!: StreamWriter;
    const body = producerStream({ heartbeatMs: 20, onCancel() {}, produce: (w) => { writer = w; return Bun.sleep(70); } });
    const text = await new Response(body).text();
    expect(writer.closed).toBe(true);
    expect(text).toContain(": keep-alive\n\n");
  });
});
