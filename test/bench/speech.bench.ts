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
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { writeTinyKokoro } from "../support/tiny-kokoro";
import { decodeAudio } from "../support/audio-decode";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const FORMATS = ["pcm", "wav", "mp3", "opus", "flac"];

const TEXT = (
  "The harbour was quiet when the ferry came in at 6:45 pm on June 3rd, 2024. " +
  "Forty-two passengers stepped onto the pier, and a porter charged $3.50 for each bag. " +
  "Dr. Patel, who had crossed the strait more than 1,200 times, said the weather looked unusually calm. " +
  "Gulls circled above the fish market while the lamps along the promenade flickered on, one by one. " +
  "Somewhere a radio played an old song about leaving home; nobody seemed to mind. " +
  "By nine o'clock the last taxi had gone, the cafés had closed, and only the lighthouse kept turning. " +
  "Tomorrow, the timetable promised, the first boat would leave at 7:15 sharp, whatever the tide. " +
  "The harbour master wrote it all down in a ledger older than anyone could remember, page after page. " +
  "Then she locked the office, checked the moorings twice, and walked home along the wet cobbles. " +
  "Her cat was waiting by the door, as it had every evening for eleven years, and it followed her inside without a sound. " +
  "Outside, the sea kept its own slow time, patient and grey."
).slice(0, 1000);

interface Row {
  format: string;
  ttfbMs: number;
  totalMs: number;
  audioSeconds: number;
  bytes: number;
}

async function measure(h: Harness, key: string, format: string): Promise<Row> {
  const t0 = performance.now();
  const res = await fetch(h.base + "/v1/audio/speech", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "voice-82m", voice: "af_heart", input: TEXT, response_format: format }),
  });
  if (res.status !== 200) throw new Error(`${format}: HTTP ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  let ttfb = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (value.length > 0 && ttfb === 0) ttfb = performance.now() - t0;
    parts.push(value);
  }
  const totalMs = performance.now() - t0;
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  const { samples, sampleRate } = await decodeAudio(format, bytes);
  return { format, ttfbMs: ttfb, totalMs, audioSeconds: samples.length / sampleRate, bytes: bytes.length };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function table(label: string, modelsDir: string): Promise<void> {
  const h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir });
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
  } finally {
    await h.stop();
  }
}

const tmp = mkdtempSync(join(tmpdir(), "switchyard-speech-bench-"));
try {
  writeTinyKokoro(tmp);
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
