/**
 * Speech over real HTTP: time to first audio byte and total time for a 1,000-character text, per
 * response format, plus the real-time factor (synthesis seconds per second of audio).
 *
 *   ./node_modules/.bin/bun test/bench/speech.bench.ts                       # test model
 *   SWITCHYARD_MODELS_DIR=/srv/models ./node_modules/.bin/bun test/bench/speech.bench.ts
 *
 * The test model (test/support/tiny-kokoro.ts) costs almost nothing per chunk, so its figures are
 * the front end's and the encoders' cost. When SWITCHYARD_MODELS_DIR holds the real voice-82m
 * files, the same table is printed for the real Kokoro-82M, whose real-time factor is the
 * number that matters.
 *
 * Then, per model, concurrency 1 and 16 (BENCH_SECONDS each, default 5): clients ask for a
 * 400-character text as PCM again and again; the table gives the median time to first audio,
 * the median real-time factor per request (request time / audio seconds) and the audio seconds
 * served per wall-clock second. The graph each model loaded (int8 on CPU, fp32 on CUDA when both
 * are there) is printed with it. test/gpu-check/ runs the same measurement on a GPU.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { writeTinyKokoro } from "../support/tiny-kokoro";
import { decodeAudio } from "../support/audio-decode";
import { HARBOUR_PASSAGE } from "./lib/passage";
import { timedSpeech } from "./lib/timed-speech";
import type { SpeechEngine } from "../../src/engines/speech/engine";
import { median } from "./lib/load";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** BENCH_VOICE picks the voice (default af_heart); a non-English one reads the English text (lang_code a). */
const VOICE = process.env.BENCH_VOICE ?? "af_heart";
const VOICE_FIELDS = { voice: VOICE, ...(/^[ab]/.test(VOICE) ? {} : { lang_code: "a" }) };
/** BENCH_FORMATS=pcm,mp3 limits the per-format table (the real model takes ~1 min per format on a small CPU). */
const FORMATS = (process.env.BENCH_FORMATS ?? "pcm,wav,mp3,opus,flac").split(",");

const TEXT = HARBOUR_PASSAGE.slice(0, 1000);

interface Row {
  format: string;
  ttfbMs: number;
  totalMs: number;
  audioSeconds: number;
  bytes: number;
}

async function measure(h: Harness, key: string, format: string): Promise<Row> {
  const { ttfbMs, totalMs, bytes } = await timedSpeech(h.base, key, { model: "voice-82m", ...VOICE_FIELDS, input: TEXT, response_format: format });
  const { samples, sampleRate } = await decodeAudio(format, bytes);
  return { format, ttfbMs, totalMs, audioSeconds: samples.length / sampleRate, bytes: bytes.length };
}

/** Closed loop at `concurrency`: first audio and real-time factor per request, audio served per second. */
async function underLoad(h: Harness, key: string, concurrency: number): Promise<string> {
  const input = HARBOUR_PASSAGE.slice(0, 400);
  const rows: { ttfb: number; rtf: number; audio: number }[] = [];
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const r = await timedSpeech(h.base, key, { model: "voice-82m", ...VOICE_FIELDS, input, response_format: "pcm" });
        const audio = r.bytes.length / 2 / 24_000;
        rows.push({ ttfb: r.ttfbMs, rtf: r.totalMs / 1000 / audio, audio });
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const served = rows.reduce((n, r) => n + r.audio, 0) / wall;
  return `| ${concurrency} | ${rows.length} | ${median(rows.map((r) => r.ttfb)).toFixed(1)} | ${median(rows.map((r) => r.rtf)).toFixed(4)} | ${served.toFixed(2)} |`;
}

async function table(label: string, modelsDir: string): Promise<void> {
  // Closed-loop clients at concurrency 16 send far more than the default per-account limits.
  const h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir, SWITCHYARD_RATE_LIMIT_RPM: "10000000", SWITCHYARD_CONCURRENCY_LIMIT: "100000" });
  try {
    const { key } = await h.account(100);
    await measure(h, key, "mp3"); // warm-up: JIT, WebAssembly compilation, ORT first run
    await measure(h, key, "opus");
    console.log(`\n${label}: ${TEXT.length}-character text, median of ${RUNS} runs`);
    console.log("format  first byte ms  total ms  audio s  real-time factor  bytes");
    for (const format of FORMATS) {
      const rows: Row[] = [];
      for (let i = 0; i < RUNS; i++) rows.push(await measure(h, key, format));
      const r = { ttfb: median(rows.map((x) => x.ttfbMs)), total: median(rows.map((x) => x.totalMs)), audio: rows[0]!.audioSeconds, bytes: rows[0]!.bytes };
      console.log(
        `${format.padEnd(6)}  ${r.ttfb.toFixed(1).padStart(13)}  ${r.total.toFixed(1).padStart(8)}  ${r.audio.toFixed(2).padStart(7)}  ${(r.total / 1000 / r.audio).toFixed(4).padStart(16)}  ${String(r.bytes).padStart(7)}`,
      );
    }
    const d = h.server.services.engines.get<SpeechEngine>("voice-82m")?.describe() ?? {};
    console.log(`\nunder load: 400-character text as PCM, ${SECONDS} s per row; graph ${String(d.file)} on ${String(d.provider)}`);
    console.log("| concurrency | requests | first audio p50 ms | real-time factor p50 | audio s served per s |\n|---:|---:|---:|---:|---:|");
    for (const c of [1, 16]) console.log(await underLoad(h, key, c));
  } finally {
    await h.stop();
  }
}

const tmp = mkdtempSync(join(tmpdir(), "switchyard-speech-bench-"));
try {
  writeTinyKokoro(tmp, { voices: [...new Set(["af_heart", VOICE])] });
  await table("test model (tiny Kokoro-signature ONNX: front end + encoders dominate)", tmp);
  const real = process.env.SWITCHYARD_MODELS_DIR;
  if (real && existsSync(join(real, "voice-82m", "onnx", "model.onnx"))) {
    await table(`real Kokoro-82M weights from ${join(real, "voice-82m")} (real-time factor < 1 is faster than real time)`, real);
  } else {
    console.log("\nreal weights: not present (set SWITCHYARD_MODELS_DIR to a directory with voice-82m/ for the real model's real-time factor)");
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
