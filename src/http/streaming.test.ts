import { describe, expect, test } from "bun:test";
import { producerStream, watchProducerEnd, type StreamEnd, type StreamWriter } from "./streaming";
import { activePeriods } from "./shared-ticker";

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
