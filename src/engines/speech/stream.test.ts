/**
 * Backpressure of a speech stream: a client that stops reading stops synthesis (one chunk is
 * prefetched); one that stays stalled is cut off after the stall timeout and its delivered usage
 * is only the sentences whose audio it took.
 */
import { expect, test } from "bun:test";
import { createEncoder } from "../../audio/encoder";
import type { SpeechChunk } from "../../text/frontend";
import { Log } from "../../log";
import { producerStream } from "../../metering/producer-stream";
import { MeteredOut, type StreamEnding } from "../../metering/metered-stream";
import type { SpeechEngine } from "./engine";
import { SPEECH_HIGH_WATER_BYTES, startSpeechStream } from "./stream";

/** An engine double: one second of audio (48 KB of pcm) per chunk, counting its calls. */
function countingEngine() {
  const calls = { n: 0 };
  const engine = {
    voices: { style: () => new Float32Array(256) },
    synthesize: async () => {
      calls.n++;
      return new Float32Array(24_000).fill(0.1);
    },
  } as unknown as SpeechEngine;
  return { engine, calls };
}

const chunks = (n: number): SpeechChunk[] => Array.from({ length: n }, () => ({ text: "Hello there. ", chars: 13, phonemes: "", ids: [1, 2, 3], pauseBeforeMs: 0 }));

/** The source run into a real producer stream, as the speech route runs it (without the ledger). */
async function open(n: number, stallTimeoutMs = 60_000) {
  const { engine, calls } = countingEngine();
  const plan = { engine, chunks: chunks(n), voices: ["af_heart"], speed: 1, priority: false, encoder: await createEncoder("pcm", 24_000) };
  const source = await startSpeechStream(plan, undefined, n * 13, new Log("silent"), "req_test");
  let out!: MeteredOut;
  let ended!: (e: StreamEnding) => void;
  const ending = new Promise<StreamEnding>((r) => (ended = r));
  const stream = producerStream({
    highWaterBytes: SPEECH_HIGH_WATER_BYTES,
    stallTimeoutMs,
    onCancel: () => source.cancel(),
    produce: async (w) => {
      out = new MeteredOut(w);
      ended(await source.run(out));
    },
  });
  return { stream, calls, source, ending, untaken: () => out.untaken() };
}

test("a client that does not read stops synthesis after the queue fills; reading resumes it", async () => {
  expect(48_000).toBeGreaterThan(SPEECH_HIGH_WATER_BYTES);
  const { stream, calls, ending } = await open(20);
  await Bun.sleep(200);
  // Chunk 0 was sent (over the high-water mark on its own), chunk 1 prefetched; nothing more.
  expect(calls.n).toBeLessThanOrEqual(3);
  const reader = stream.getReader();
  let bytes = 0;
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    bytes += r.value.byteLength;
  }
  expect(calls.n).toBe(20);
  expect(bytes).toBe(20 * 48_000);
  const end = await ending;
  expect(end.kind).toBe("completed");
  expect((end as { usage: unknown }).usage).toEqual({ characters: 20 * 13 });
});

test("a client stalled past the timeout is cut off and its delivered usage is the sentences it took", async () => {
  const { stream, calls, source, untaken } = await open(20, 300);
  const reader = stream.getReader();
  // Take the first three chunks' audio, then stop reading.
  let bytes = 0;
  while (bytes < 3 * 48_000) bytes += (await reader.read()).value!.byteLength;
  await Bun.sleep(800);
  await expect(reader.read()).rejects.toBeDefined();
  const delivered = await source.deliveredUsage(untaken());
  // What it took, never more: the bytes the producer handed to the client bound it.
  expect(delivered!.characters).toBeGreaterThanOrEqual(3 * 13);
  expect(delivered!.characters).toBeLessThanOrEqual(4 * 13);
  expect(calls.n).toBeLessThan(8);
});
