/**
 * Backpressure of a speech stream: a client that stops reading stops synthesis (one chunk is
 * prefetched); one that stays stalled is cut off after the stall timeout and is billed only for
 * the sentences whose audio it took.
 */
import { expect, test } from "bun:test";
import { createEncoder } from "../../audio/encoder";
import type { SpeechChunk } from "../../text/frontend";
import type { SpeechEngine } from "./engine";
import { openSpeechStream, SPEECH_HIGH_WATER_BYTES, type SpeechOutcome } from "./stream";

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

async function open(n: number, stallTimeoutMs = 60_000) {
  const { engine, calls } = countingEngine();
  const outcomes: SpeechOutcome[] = [];
  const stream = await openSpeechStream(
    { engine, chunks: chunks(n), voices: ["af_heart"], speed: 1, priority: false, encoder: await createEncoder("pcm", 24_000), stallTimeoutMs },
    undefined,
    async (o) => void outcomes.push(o),
  );
  return { stream, calls, outcomes };
}

test("a client that does not read stops synthesis after the queue fills; reading resumes it", async () => {
  expect(48_000).toBeGreaterThan(SPEECH_HIGH_WATER_BYTES);
  const { stream, calls, outcomes } = await open(20);
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
  expect(outcomes).toEqual([{ kind: "completed", deliveredChars: 20 * 13 }]);
});

test("a client stalled past the timeout is cut off and billed for the sentences it took", async () => {
  const { stream, calls, outcomes } = await open(20, 300);
  const reader = stream.getReader();
  // Take the first three chunks' audio, then stop reading.
  let bytes = 0;
  while (bytes < 3 * 48_000) bytes += (await reader.read()).value!.byteLength;
  await Bun.sleep(800);
  expect(outcomes.length).toBe(1);
  expect(outcomes[0]!.kind).toBe("cancelled");
  const billed = (outcomes[0] as { deliveredChars: number }).deliveredChars;
  // What it took, never more: the pull that saw the client take bytes bounds it from below.
  expect(billed).toBeGreaterThanOrEqual(2 * 13);
  expect(billed).toBeLessThanOrEqual(3 * 13);
  expect(calls.n).toBeLessThan(8);
  await expect(reader.read()).rejects.toBeDefined();
});
