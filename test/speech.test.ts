/**
 * POST /v1/audio/speech and GET /v1/audio/voices over real HTTP, on a tiny ONNX model with
 * Kokoro-82M's signature (test/support/tiny-kokoro.ts): every format decodes, durations follow
 * the token count and `speed`, blends average the voices' style rows (row = token count), long
 * input is chunked under the 510-token window, the official openai SDK works, and billing is
 * per input code point (1.5x for turbo).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import type { Harness } from "./support/harness";
import { SAMPLES_PER_TOKEN, STYLE_DIM, TEST_VOICES, voiceValue } from "./support/tiny-kokoro";
import { postSpeech, startSpeechStack, stopSpeechStack } from "./support/speech-stack";
import { decodeAudio, decodePcm } from "./support/audio-decode";
import { settled } from "./support/ledger-state";
import { planSpeech } from "../src/text/frontend";
import { KOKORO_VOCAB } from "../src/text/kokoro-vocab";
import { speechCost, codePoints } from "../src/billing/prices";
import { PRIORITY, STANDARD } from "../src/billing/money";

let h: Harness;
let modelsDir: string;
let key: string;
let accountId: string;

const TEXT = "The quick brown fox jumps over the lazy dog. It was 3:30 pm on March 3rd, 2024, and the fox paid $5.20!";

function speech(body: Record<string, unknown>, k = key) {
  return postSpeech(h.base, k, { model: "voice-82m", voice: "af_heart", ...body });
}

/** Samples the tiny model makes for a text: per chunk, the 256-sample style head plus the tone. */
function expectedSamples(text: string, speed: number, dialect: "us" | "gb" = "us"): number {
  // The test model's output is loud from its first sample to its last, so trimming keeps all of
  // it; each chunk after the first is preceded by its punctuation pause.
  return planSpeech(text, dialect, KOKORO_VOCAB).reduce(
    (n, c) => n + Math.max(0, Math.round((c.pauseBeforeMs * 24) / speed)) + STYLE_DIM + Math.floor(((c.ids.length + 2) * SAMPLES_PER_TOKEN) / speed),
    0,
  );
}

const entry = () => h.server.services.catalog.get("voice-82m")!;

beforeAll(async () => {
  ({ h, modelsDir } = await startSpeechStack("switchyard-speech-"));
  const a = await h.account(10);
  key = a.key;
  accountId = a.id;
});
afterAll(() => stopSpeechStack(h, modelsDir));

describe("speech formats", () => {
  const types: Record<string, string> = { mp3: "audio/mpeg", wav: "audio/wav", opus: "audio/ogg", flac: "audio/flac", pcm: "audio/pcm" };
  for (const [format, contentType] of Object.entries(types)) {
    test(`${format}: ${contentType}, decodes to the synthesised duration`, async () => {
      const res = await speech({ input: TEXT, response_format: format });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(contentType);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const { samples, sampleRate } = await decodeAudio(format, bytes);
      const expectedSeconds = expectedSamples(TEXT, 1) / 24_000;
      const seconds = samples.length / sampleRate;
      if (format === "pcm" || format === "wav" || format === "flac") expect(samples.length).toBe(expectedSamples(TEXT, 1));
      else expect(Math.abs(seconds - expectedSeconds)).toBeLessThan(0.12); // codec frame padding / delay
    });
  }

  test("mp3 is the default format", async () => {
    const res = await speech({ input: "Hello." });
    expect(res.headers.get("content-type")).toBe("audio/mpeg");
    const bytes = new Uint8Array(await res.arrayBuffer());
    // An MPEG audio frame sync (11 set bits) starts the stream.
    expect(bytes[0]).toBe(0xff);
    expect(bytes[1]! & 0xe0).toBe(0xe0);
  });
});

describe("synthesis", () => {
  test("durations scale with speed (0.25 to 4.0 inclusive)", async () => {
    const lengths: Record<number, number> = {};
    for (const speed of [0.25, 0.5, 1, 2, 4]) {
      const res = await speech({ input: "A short sentence to time.", response_format: "pcm", speed });
      expect(res.status).toBe(200);
      lengths[speed] = decodePcm(new Uint8Array(await res.arrayBuffer())).samples.length;
      expect(lengths[speed]).toBe(expectedSamples("A short sentence to time.", speed));
    }
    const tone = (speed: number) => lengths[speed]! - STYLE_DIM;
    expect(tone(0.5)).toBe(2 * tone(1));
    expect(tone(0.25)).toBe(4 * tone(1));
    expect(tone(1)).toBe(2 * tone(2));
    expect(tone(1)).toBe(4 * tone(4));
  });

  test("the style row follows the token count, and comma-joined voices average their rows", async () => {
    const input = "Blend these voices.";
    const [chunk] = planSpeech(input, "us", KOKORO_VOCAB);
    const row = chunk!.ids.length;
    const head = async (voice: string) => {
      const res = await speech({ input, voice, response_format: "pcm" });
      expect(res.status).toBe(200);
      return decodePcm(new Uint8Array(await res.arrayBuffer())).ints.slice(0, STYLE_DIM);
    };
    const j = (id: string) => TEST_VOICES.indexOf(id);
    const single = await head("af_bella");
    for (let c = 0; c < STYLE_DIM; c++) expect(single[c]).toBe(Math.round(voiceValue(j("af_bella"), row, c) * 32767));
    const blend = await head("af_bella,af_sky,am_adam");
    for (let c = 0; c < STYLE_DIM; c++) {
      const mean = (voiceValue(j("af_bella"), row, c) + voiceValue(j("af_sky"), row, c) + voiceValue(j("am_adam"), row, c)) / 3;
      expect(Math.abs(blend[c]! - mean * 32767)).toBeLessThanOrEqual(1);
    }
    // Spaces around the commas are tolerated.
    expect([...(await head("af_bella , af_sky , am_adam"))]).toEqual([...blend]);
  });

  test("long input is cut into chunks within the 510-token window, and all of it is spoken", async () => {
    const input = ("Without any full stops this clause goes on and on, and on again " + "with more words ").repeat(50).slice(0, 4096);
    const chunks = planSpeech(input, "us", KOKORO_VOCAB);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.ids.length).toBeLessThanOrEqual(510);
    expect(chunks.reduce((n, c) => n + c.chars, 0)).toBe(codePoints(input));
    const res = await speech({ input, response_format: "pcm" });
    expect(res.status).toBe(200);
    expect(decodePcm(new Uint8Array(await res.arrayBuffer())).samples.length).toBe(expectedSamples(input, 1));
  });

  test("unknown characters are dropped; input with nothing to say is a 400 naming input", async () => {
    const res = await speech({ input: "Hello 😀 ∑ 日本 world", response_format: "wav" });
    expect(res.status).toBe(200);
    const { samples } = await decodeAudio("wav", new Uint8Array(await res.arrayBuffer()));
    expect(samples.length).toBe(expectedSamples("Hello 😀 ∑ 日本 world", 1));
    for (const input of ["😀 🎉", "   ", "🙂"]) {
      const silent = await speech({ input, response_format: "wav" });
      expect(silent.status).toBe(400);
      const body = (await silent.json()) as { error: { param: string } };
      expect(body.error.param).toBe("input");
    }
  });

  test("British voices get British pronunciation", async () => {
    const gb = planSpeech("The car is far.", "gb", KOKORO_VOCAB);
    const us = planSpeech("The car is far.", "us", KOKORO_VOCAB);
    expect(gb[0]!.phonemes).not.toEqual(us[0]!.phonemes);
    const res = await speech({ input: "The car is far.", voice: "bf_emma", response_format: "pcm" });
    expect(decodePcm(new Uint8Array(await res.arrayBuffer())).samples.length).toBe(expectedSamples("The car is far.", 1, "gb"));
  });
});

describe("voices", () => {
  test("GET /v1/audio/voices lists the voice packs present", async () => {
    const res = await fetch(h.base + "/v1/audio/voices");
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe("list");
    expect(body.data.map((v: { id: string }) => v.id).sort()).toEqual([...TEST_VOICES].sort());
    expect(body.data.find((v: { id: string }) => v.id === "bf_emma")).toMatchObject({ language: "en-GB", gender: "female", model: "voice-82m" });
  });

  test("voice-82m and voice-82m-turbo are listed in /v1/models while loaded", async () => {
    const ids = (await (await fetch(h.base + "/v1/models")).json()).data.map((m: { id: string }) => m.id);
    expect(ids).toContain("voice-82m");
    expect(ids).toContain("voice-82m-turbo");
  });
});

describe("billing", () => {
  test("a completed request is charged per input code point; turbo 1.5x", async () => {
    const input = "Café ☕ costs €3. 😀";
    for (const [model, m, tier] of [["voice-82m", STANDARD, "default"], ["voice-82m-turbo", PRIORITY, "priority"]] as const) {
      const before = h.ledgerSum(accountId);
      const res = await speech({ model, input, response_format: "wav" });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-service-tier")).toBe(tier);
      await res.arrayBuffer();
      const state = await settled(h, accountId);
      expect(state.pendingHolds).toBe(0);
      const charged = before - state.sum;
      expect(charged).toBe(speechCost(entry(), m, codePoints(input)));
      const row = h.db
        .query("SELECT characters, service_tier, model FROM ledger_entries WHERE account_id = ? AND kind = 'charge' ORDER BY id DESC LIMIT 1")
        .get(accountId) as { characters: number; service_tier: string; model: string };
      expect(row).toEqual({ characters: codePoints(input), service_tier: tier, model });
    }
    expect(speechCost(entry(), PRIORITY, 1000) * 2).toBe(speechCost(entry(), STANDARD, 1000) * 3);
    // service_tier "priority" on the base id is turbo too.
    const before = h.ledgerSum(accountId);
    const res = await speech({ input, response_format: "pcm", service_tier: "priority" });
    expect(res.headers.get("x-service-tier")).toBe("priority");
    await res.arrayBuffer();
    expect(before - (await settled(h, accountId)).sum).toBe(speechCost(entry(), PRIORITY, codePoints(input)));
  });

  test("too little credit: 402 before any synthesis, nothing held", async () => {
    const poor = await h.account("0.000001");
    const res = await speech({ input: "x".repeat(4000) }, poor.key);
    expect(res.status).toBe(402);
    expect((await res.json()).error.code).toBe("insufficient_credits");
    expect(h.balanceUnits(poor.id).reserved).toBe(0);
  });
});

describe("openai SDK", () => {
  test("audio.speech.create returns decodable audio", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: h.base + "/v1" });
    const res = await client.audio.speech.create({ model: "voice-82m", voice: "af_heart", input: "Hello from the official client.", response_format: "flac", speed: 1.25 });
    const bytes = new Uint8Array(await res.arrayBuffer());
    const { samples } = await decodeAudio("flac", bytes);
    expect(samples.length).toBe(expectedSamples("Hello from the official client.", 1.25));
    const mp3 = await client.audio.speech.create({ model: "voice-82m-turbo", voice: "af_heart,bf_emma", input: "Default format." });
    expect((await decodeAudio("mp3", new Uint8Array(await mp3.arrayBuffer()))).samples.length).toBeGreaterThan(0);
  });
});
