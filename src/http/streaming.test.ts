import { describe, expect, test } from "bun:test";
import { producerStream, watchProducerEnd, type StreamEnd } from "./streaming";

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
