/**
 * Bad input to POST /v1/audio/speech: each case is a 400 that names the field (and, for voices,
 * lists the valid ones), and leaves no trace in the ledger: no charge, no hold, balance intact.
 * Also: the model is 503 while its files are missing, and goes live when they appear.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "./support/harness";
import { TEST_VOICES, writeTinyKokoro } from "./support/tiny-kokoro";
import { postSpeech, startSpeechStack, stopSpeechStack } from "./support/speech-stack";
import { ledgerState } from "./support/ledger-state";

let h: Harness;
let modelsDir: string;
let key: string;
let accountId: string;

beforeAll(async () => {
  ({ h, modelsDir } = await startSpeechStack("switchyard-speech-bad-"));
  const a = await h.account(10);
  key = a.key;
  accountId = a.id;
});
afterAll(() => stopSpeechStack(h, modelsDir));

const ok = { model: "voice-82m", input: "Hello there.", voice: "af_heart" };

type Case = [name: string, body: unknown, param: string | null, code?: string, mentions?: RegExp];
const CASES: Case[] = [
  ["empty input", { ...ok, input: "" }, "input"],
  ["input over 4,096 characters", { ...ok, input: "a".repeat(4097) }, "input", "invalid_value", /4096/],
  ["4,097 code points of emoji", { ...ok, input: "😀".repeat(4097) }, "input"],
  ["missing input", { model: "voice-82m", voice: "af_heart" }, "input", "missing_required_parameter"],
  ["input not a string", { ...ok, input: ["a"] }, "input"],
  ["missing voice", { model: "voice-82m", input: "Hi." }, "voice", "missing_required_parameter"],
  ["unknown voice", { ...ok, voice: "nova" }, "voice", "invalid_value", /af_bella/],
  ["plus-joined voices", { ...ok, voice: "af_bella+af_sky" }, "voice", "invalid_value", /af_sky/],
  ["semicolon-joined voices", { ...ok, voice: "af_bella;af_sky" }, "voice"],
  ["space-joined voices", { ...ok, voice: "af_bella af_sky" }, "voice"],
  ["empty voice in a blend", { ...ok, voice: "af_bella,," }, "voice"],
  ["one unknown voice in a blend", { ...ok, voice: "af_bella,xx_nobody" }, "voice", "invalid_value", /xx_nobody/],
  ["speed 0.2", { ...ok, speed: 0.2 }, "speed", "invalid_value", /0\.25/],
  ["speed 4.5", { ...ok, speed: 4.5 }, "speed", "invalid_value", /4/],
  ["speed as a string", { ...ok, speed: "fast" }, "speed"],
  ["unknown response_format", { ...ok, response_format: "ogg" }, "response_format", "invalid_value", /mp3/],
  ["aac (not offered)", { ...ok, response_format: "aac" }, "response_format"],
  ["unknown model id", { ...ok, model: "not-a-speech-model" }, "model", "model_not_found"],
  ["embedding model id", { ...ok, model: "embedding-300m" }, "model", "wrong_endpoint", /POST \/v1\/embeddings/],
  ["sse stream_format", { ...ok, stream_format: "sse" }, "stream_format"],
  ["a Japanese voice for the English front end", { ...ok, voice: "jf_alpha" }, "voice", "invalid_value", /Japanese \(j\).*American English \(a\) and British English \(b\).*lang_code/],
  ["a lang_code the front end does not speak", { ...ok, lang_code: "j" }, "lang_code", "invalid_value", /a, b/],
  ["a lang_code longer than one letter", { ...ok, lang_code: "en" }, "lang_code"],
];

describe("speech bad input", () => {
  test("a chat model id is a wrong_endpoint 400 naming POST /v1/chat/completions", async () => {
    const chat = h.server.services.catalog.all().find((e) => e.kind === "chat")!;
    const before = ledgerState(h, accountId);
    const res = await postSpeech(h.base, key, { ...ok, model: chat.id });
    expect(res.status).toBe(400);
    const err = (await res.json()).error;
    expect(err).toMatchObject({ code: "wrong_endpoint", param: "model" });
    expect(err.message).toContain("POST /v1/chat/completions");
    expect(ledgerState(h, accountId)).toEqual(before);
  });

  for (const [name, body, param, code, mentions] of CASES) {
    test(`${name} → 4xx naming '${param}', nothing billed`, async () => {
      const before = ledgerState(h, accountId);
      const res = await postSpeech(h.base, key, body);
      const expectedStatus = code === "model_not_found" ? 404 : 400;
      expect(res.status).toBe(expectedStatus);
      const err = (await res.json()).error;
      expect(err.param).toBe(param);
      if (code) expect(err.code).toBe(code);
      if (param) expect(err.message).toContain(param);
      if (mentions) expect(err.message).toMatch(mentions);
      expect(ledgerState(h, accountId)).toEqual(before);
    });
  }

  test("an unknown voice's error lists every valid voice", async () => {
    const res = await postSpeech(h.base, key, { ...ok, voice: "af_bella+af_sky" });
    const { message } = (await res.json()).error;
    for (const v of TEST_VOICES) expect(message).toContain(v);
  });

  test("malformed JSON and a missing key are refused before anything else", async () => {
    const bad = await fetch(h.base + "/v1/audio/speech", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{" });
    expect(bad.status).toBe(400);
    const anon = await fetch(h.base + "/v1/audio/speech", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ok) });
    expect(anon.status).toBe(401);
  });
});

describe("model files", () => {
  test("the voices are exactly voices/*.bin: Japanese packs alone load, and read English only with lang_code", async () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-speech-ja-"));
    writeTinyKokoro(dir, { voices: ["jf_alpha", "jm_kumo"] });
    const h2 = await startHarness({ SWITCHYARD_MODELS_DIR: dir });
    try {
      const a = await h2.account(1);
      const deadline = Date.now() + 12_000;
      while (!h2.server.services.engines.isLoaded("voice-82m") && Date.now() < deadline) await Bun.sleep(100);
      const voices = (await (await fetch(h2.base + "/v1/audio/voices")).json()).data.map((v: { id: string; language: string }) => [v.id, v.language]);
      expect(voices).toEqual([["jf_alpha", "ja"], ["jm_kumo", "ja"]]);
      const refused = await postSpeech(h2.base, a.key, { ...ok, voice: "jf_alpha" });
      expect(refused.status).toBe(400);
      expect((await refused.json()).error.param).toBe("voice");
      const spoken = await postSpeech(h2.base, a.key, { ...ok, voice: "jm_kumo,jf_alpha", lang_code: "a", response_format: "pcm" });
      expect(spoken.status).toBe(200);
      expect((await spoken.arrayBuffer()).byteLength).toBeGreaterThan(0);
    } finally {
      await h2.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);

  test("without weights: 503 model_not_installed (no Retry-After), not listed; copying them in makes it live without a restart", async () => {
    const empty = mkdtempSync(join(tmpdir(), "switchyard-speech-none-"));
    const h2 = await startHarness({ SWITCHYARD_MODELS_DIR: empty });
    try {
      const a = await h2.account(1);
      const post = () => postSpeech(h2.base, a.key, ok);
      const res = await post();
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      const error = (await res.json()).error;
      expect(error.code).toBe("model_not_installed");
      expect(error.message).toContain("switchyard models pull voice-82m");
      const voices = await fetch(h2.base + "/v1/audio/voices");
      expect(voices.status).toBe(503);
      expect((await voices.json()).error.code).toBe("model_not_installed");
      const ids = (await (await fetch(h2.base + "/v1/models")).json()).data.map((m: { id: string }) => m.id);
      expect(ids).not.toContain("voice-82m");

      writeTinyKokoro(empty);
      const deadline = Date.now() + 12_000;
      while (!h2.server.services.engines.isLoaded("voice-82m") && Date.now() < deadline) await Bun.sleep(100);
      const live = await post();
      expect(live.status).toBe(200);
      await live.arrayBuffer();
    } finally {
      await h2.stop();
      rmSync(empty, { recursive: true, force: true });
    }
  }, 20_000);
});
