import { describe, expect, test } from "bun:test";
import { onStreamEnd } from "./request-lifecycle";

const enc = new TextEncoder();

function source(parts: string[], fail = false) {
  let i = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < parts.length) c.enqueue(enc.encode(parts[i++]!));
      else if (fail) c.error(new Error("boom"));
      else c.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, wasCancelled: () => cancelled };
}

describe("onStreamEnd", () => {
  test("passes every byte through and reports completion once", async () => {
    const outcomes: string[] = [];
    const s = source(["a", "b", "c"]);
    const text = await new Response(onStreamEnd(s.stream, (o) => outcomes.push(o))).text();
    expect(text).toBe("abc");
    expect(outcomes).toEqual(["completed"]);
  });

  test("a consumer that cancels is reported and the cancel reaches the source", async () => {
    const outcomes: string[] = [];
    const s = source(["a", "b", "c"]);
    const reader = onStreamEnd(s.stream, (o) => outcomes.push(o)).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("a");
    await reader.cancel("client went away");
    await reader.cancel("twice");
    expect(outcomes).toEqual(["cancelled"]);
    expect(s.wasCancelled()).toBe(true);
  });

  test("a source that errors is reported as failed and the error propagates", async () => {
    const outcomes: string[] = [];
    const s = source(["a"], true);
    const p = new Response(onStreamEnd(s.stream, (o) => outcomes.push(o))).text();
    await expect(p).rejects.toThrow("boom");
    expect(outcomes).toEqual(["failed"]);
  });
});
