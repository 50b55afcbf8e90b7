/**
 * The local models on their real weights, each against bare ONNX Runtime in the same run:
 *
 *   SWITCHYARD_MODELS_DIR=/path/to/models REFERENCE_PYTHON=/path/to/python \
 *   MISAKI_PYTHON=/path/to/python-with-misaki ./node_modules/.bin/bun test/bench/real-models.bench.ts
 *
 * Speech (voice-82m): time to first byte, real-time factor and CPU per audio second of the
 * server against bare ONNX Runtime on the same phoneme ids; silence at the edges of every chunk;
 * FLAC read back by libsndfile (python soundfile, when REFERENCE_PYTHON has it); phoneme error
 * rate of the front end against misaki and espeak-ng when present (lib/phoneme-error.ts).
 * Embeddings (embedding-300m): tokens/s at concurrency 1, 16 and 64 against bare ONNX Runtime,
 * and cosine against references computed in the same run (lib/real-embeddings.ts).
 *
 * Without real weights in SWITCHYARD_MODELS_DIR it says so and exits 0. BENCH_SECONDS (default 4)
 * sets the length of each throughput cell; BENCH_ONLY=speech|embeddings|phonemes runs one part.
 * The machine is usually shared: compare only ratios measured here, in one run.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startHarness } from "../support/harness";
import { benchEmbeddings } from "./lib/real-embeddings";
import { benchSpeech } from "./lib/real-speech";
import { benchPhonemes } from "./lib/phoneme-error";

const modelsDir = process.env.SWITCHYARD_MODELS_DIR;
const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const only = process.env.BENCH_ONLY;
const speechDir = modelsDir ? join(modelsDir, "voice-82m") : "";
const embeddingDir = modelsDir ? join(modelsDir, "embedding-300m") : "";
const hasSpeech = modelsDir !== undefined && existsSync(join(speechDir, "onnx", "model.onnx"));
const hasEmbeddings = modelsDir !== undefined && existsSync(join(embeddingDir, "onnx", "model.onnx")) && existsSync(join(embeddingDir, "tokenizer.json"));

if (!only || only === "phonemes") await benchPhonemes();

if (!hasSpeech && !hasEmbeddings) {
  console.log(`\nreal weights: not present (set SWITCHYARD_MODELS_DIR to a directory with voice-82m/ and embedding-300m/; see models/README.md); nothing else to measure`);
  process.exit(0);
}

const h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir!, SWITCHYARD_CONCURRENCY_LIMIT: "100000", SWITCHYARD_RATE_LIMIT_RPM: "10000000" });
try {
  const { key } = await h.account(100_000);
  const deadline = Date.now() + 120_000;
  const want = [hasSpeech && (!only || only === "speech") ? "voice-82m" : null, hasEmbeddings && (!only || only === "embeddings") ? "embedding-300m" : null].filter((x): x is string => x !== null);
  while (!want.every((m) => h.server.services.engines.isLoaded(m))) {
    if (Date.now() > deadline) throw new Error(`models did not load within 120 s: ${want.join(", ")}`);
    await Bun.sleep(200);
  }
  if (want.includes("voice-82m")) await benchSpeech(h, key, speechDir, Number(process.env.BENCH_SPEECH_ROUNDS ?? 3));
  else if (!hasSpeech) console.log("\nvoice-82m: no real weights in SWITCHYARD_MODELS_DIR; not measured");
  if (want.includes("embedding-300m")) await benchEmbeddings(h, key, embeddingDir, seconds);
  else if (!hasEmbeddings) console.log("\nembedding-300m: no real weights in SWITCHYARD_MODELS_DIR; not measured");
} finally {
  await h.stop();
}
