/**
 * Streaming and scheduling of speech over real HTTP, with a tiny Kokoro-signature model that takes
 * real time per chunk (test/support/tiny-kokoro.ts `work`): the first bytes arrive while later
 * sentences are still unsynthesised, turbo overtakes a queue of standard requests, and a client
 * that leaves pays only for the sentences whose audio it was sent (nothing before any audio).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Harness } from "./support/harness";
import { postSpeech, startSpeechStack, stopSpeechStack } from "./support/speech-stack";
import { ledgerState, settled } from "./support/ledger-state";
import { planSpeech } from "../src/text/frontend";
import { KOKORO_VOCAB } from "../src/text/kokoro-vocab";
import { codePoints, speechCost } from "../src/billing/prices";
import { STANDARD } from "../src/billing/money";
import type { SpeechEngine } from "../src/engines/speech/engine";

let h: Harness;
let modelsDir: string;
let key: string;
let accountId: string;

const SENTENCE = "This sentence takes the tiny model a little while to speak aloud. ";
const LONG = SENTENCE.repeat(8);

function speech(body: Record<string, unknown>, signal?: AbortSignal) {
  return postSpeech(h.base, key, { model: "voice-82m", voice: "af_heart", response_format: "pcm", ...body }, signal);
}

const engine = () => h.server.services.engines.get<SpeechEngine>("voice-82m")!;

/** Reads until the first non-empty chunk; returns the reader to go on with. */
async function firstBytes(res: Response) {
  const reader = res.body!.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("stream ended before any audio");
    if (value.length > 0) return { reader, first: value };
  }
}

async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<number> {
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return n;
    n += value.length;
  }
}

beforeAll(async () => {
  ({ h, modelsDir } = await startSpeechStack("switchyard-speech-stream-", { work: 4 }, { SWITCHYARD_CONCURRENCY_LIMIT: "100", SWITCHYARD_RATE_LIMIT_RPM: "100000" }));
  const a = await h.account(10);
  key = a.key;
  accountId = a.id;
});
afterAll(() => stopSpeechStack(h, modelsDir));

describe("speech streaming", () => {
  test("the first audio bytes arrive before the later sentences are synthesised", async () => {
    const chunks = planSpeech(LONG, "us", KOKORO_VOCAB);
    expect(chunks.length).toBe(8);
    const before = engine().chunksSynthesised;
    const res = await speech({ input: LONG });
    expect(res.status).toBe(200);
    const { reader, first } = await firstBytes(res);
    const doneAtFirstByte = engine().chunksSynthesised - before;
    // Sentence 1 (and at most the one queued behind it) were done; six or more were still to come.
    expect(doneAtFirstByte).toBeLessThanOrEqual(2);
    const rest = await drain(reader);
    expect(engine().chunksSynthesised - before).toBe(8);
    expect(first.length + rest).toBeGreaterThan(first.length);
  }, 20_000);

  test("a turbo request overtakes a queue of standard requests", async () => {
    const order: string[] = [];
    const standards = await Promise.all([0, 1, 2].map(async (i) => {
      const res = await speech({ input: SENTENCE.repeat(6) });
      return { name: `standard-${i}`, ...(await firstBytes(res)) };
    }));
    // Every standard request is now under way with five sentences still to go.
    const finishing = standards.map(async (s) => {
      await drain(s.reader);
      order.push(s.name);
    });
    const turbo = (async () => {
      const res = await speech({ model: "voice-82m-turbo", input: SENTENCE });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      order.push("turbo");
    })();
    await Promise.all([...finishing, turbo]);
    expect(order[0]).toBe("turbo");
  }, 30_000);
});

describe("speech disconnects", () => {
  test("leaving mid-stream pays only for the sentences already sent", async () => {
    const before = ledgerState(h, accountId);
    const res = await speech({ input: LONG });
    const { reader } = await firstBytes(res);
    await reader.cancel();
    const after = await settled(h, accountId, 5_000);
    expect(after.pendingHolds).toBe(0);
    const charged = before.sum - after.sum;
    const entry = h.server.services.catalog.get("voice-82m")!;
    const perSentence = codePoints(SENTENCE);
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThan(speechCost(entry, STANDARD, codePoints(LONG)));
    // Whole sentences only: the charge is the price of some number of them.
    const sentences = [1, 2, 3, 4, 5, 6, 7].find((k) => speechCost(entry, STANDARD, k * perSentence) === charged);
    expect(sentences).toBeDefined();
  }, 20_000);

  test("FLAC is sent whole: leaving while it is synthesised pays nothing, staying gets one complete file", async () => {
    const before = ledgerState(h, accountId);
    // Sixty chunks take the test model far longer than the wait below.
    const gone = new AbortController();
    const left = speech({ input: SENTENCE.repeat(60).trim(), response_format: "flac" }, gone.signal).catch((e) => e);
    await Bun.sleep(30);
    gone.abort();
    expect(await left).toBeInstanceOf(Error);
    await settled(h, accountId, 5_000);
    expect(ledgerState(h, accountId)).toMatchObject({ sum: before.sum, charges: before.charges, pendingHolds: 0 });
    const res = await speech({ input: SENTENCE.repeat(2), response_format: "flac" });
    expect(res.headers.get("content-type")).toBe("audio/flac");
    const file = new Uint8Array(await res.arrayBuffer());
    expect(new TextDecoder().decode(file.subarray(0, 4))).toBe("fLaC");
    const after = await settled(h, accountId, 5_000);
    expect(after.charges - before.charges).toBe(1);
    expect(before.sum - after.sum).toBe(speechCost(h.server.services.catalog.get("voice-82m")!, STANDARD, codePoints(SENTENCE.repeat(2))));
  }, 20_000);

  test("leaving before any audio pays nothing", async () => {
    // Four long requests keep the queue full, so the next request's first chunk is still
    // waiting (or just running) when its client gives up.
    const before = ledgerState(h, accountId);
    const busy = await Promise.all([0, 1, 2, 3].map(async () => (await firstBytes(await speech({ input: LONG }))).reader));
    const abort = new AbortController();
    const pending = speech({ input: LONG }, abort.signal).catch((e) => e);
    await Bun.sleep(5);
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
    await Promise.all(busy.map(drain));
    await settled(h, accountId, 5_000);
    const after = ledgerState(h, accountId);
    // Only the four busy requests were charged (in full); the abandoned one was released.
    expect(after.charges - before.charges).toBe(4);
    expect(before.sum - after.sum).toBe(4 * speechCost(h.server.services.catalog.get("voice-82m")!, STANDARD, codePoints(LONG)));
    expect(after.pendingHolds).toBe(0);
  }, 20_000);
});
