/**
 * voice-82m on real weights, for test/bench/real-models.bench.ts: the server over HTTP against
 * bare ONNX Runtime (onnxruntime-node, default session options, in this process) running the
 * same phoneme ids with the same style rows, interleaved round by round in one run.
 *
 * Only Japanese voice packs ship in any package (see models/voice-82m.md), so the English text is
 * read with a Japanese voice through the documented `lang_code: "a"` override; fine for timing,
 * silence, streaming and format checks, not for judging the voice.
 *
 * CPU is this process's CPU time (process.cpuUsage covers every thread: the server's inference
 * worker, its event loop, and the bare session when it runs), so the two are measured apart in
 * time, never at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import type { Harness } from "../../support/harness";
import { planSpeech, type SpeechChunk } from "../../../src/text/frontend";
import { loadVocab } from "../../../src/engines/speech/engine";
import { VoiceBank } from "../../../src/engines/speech/voices";
import { HARBOUR_PASSAGE } from "./passage";
import { timedSpeech, type TimedSpeech } from "./timed-speech";
import { median } from "./load";

export const VOICE = "jf_alpha";
const RATE = 24_000;

export const LONG_TEXT = HARBOUR_PASSAGE.slice(0, 1009);

const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;

/** Silence per -40 dBFS over 20 ms windows, as the reference script measures it. */
export function silenceProfile(samples: Float32Array): { lead: number; tail: number; gaps: number[] } {
  const w = RATE / 50;
  const n = Math.floor(samples.length / w);
  const loud: boolean[] = [];
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let j = 0; j < w; j++) s += samples[i * w + j]! ** 2;
    loud.push(20 * Math.log10(Math.sqrt(s / w) + 1e-9) > -40);
  }
  const first = loud.indexOf(true);
  const last = loud.lastIndexOf(true);
  if (first < 0) return { lead: n * 0.02, tail: 0, gaps: [] };
  const gaps: number[] = [];
  let run = 0;
  for (let i = first; i <= last; i++) {
    if (!loud[i]) run++;
    else if (run > 0) (gaps.push(run * 0.02), (run = 0));
  }
  return { lead: first * 0.02, tail: (n - 1 - last) * 0.02, gaps };
}

class BareKokoro {
  private constructor(private readonly session: ort.InferenceSession) {}
  /** `spinning: false` turns off ORT's spin-waiting threads, as the server's session does. */
  static async open(dir: string, spinning = true): Promise<BareKokoro> {
    const spin = spinning ? "1" : "0";
    const options: ort.InferenceSession.SessionOptions = { executionProviders: ["cpu"], ...(spinning ? {} : { extra: { session: { intra_op: { allow_spinning: spin }, inter_op: { allow_spinning: spin } } } }) };
    return new BareKokoro(await ort.InferenceSession.create(join(dir, "onnx", "model.onnx"), options));
  }
  async run(ids: readonly number[], style: Float32Array): Promise<Float32Array> {
    const names = this.session.inputNames;
    const idName = names.find((n) => /tokens|input_ids/.test(n))!;
    const tokens = BigInt64Array.from([0, ...ids, 0], BigInt);
    const out = await this.session.run({
      [idName]: new ort.Tensor("int64", tokens, [1, tokens.length]),
      style: new ort.Tensor("float32", style, [1, 256]),
      speed: new ort.Tensor("float32", Float32Array.of(1), [1]),
    });
    return out[this.session.outputNames[0]!]!.data as Float32Array;
  }
  release(): Promise<void> {
    return this.session.release();
  }
}

function serve(h: Harness, key: string, input: string, format: string): Promise<TimedSpeech> {
  return timedSpeech(h.base, key, { model: "voice-82m", voice: VOICE, lang_code: "a", input, response_format: format });
}

const pcmSamples = (bytes: Uint8Array) => {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(bytes.byteLength >> 1);
  for (let i = 0; i < out.length; i++) out[i] = v.getInt16(i * 2, true) / 32768;
  return out;
};

/** libsndfile (python soundfile) reading the server's FLAC: frames and rate, or why not. */
async function soundfileReads(flac: Uint8Array): Promise<string> {
  const python = process.env.REFERENCE_PYTHON;
  if (!python) return "not checked (set REFERENCE_PYTHON to a Python with soundfile)";
  const dir = mkdtempSync(join(tmpdir(), "switchyard-flac-"));
  try {
    const file = join(dir, "speech.flac");
    writeFileSync(file, flac);
    const p = Bun.spawn([python, "-c", "import sys, soundfile as sf; a, r = sf.read(sys.argv[1], dtype='int16'); i = sf.info(sys.argv[1]); print(len(a), r, i.frames)", file], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (code !== 0) return `FAILED: ${err.trim().split("\n").at(-1)}`;
    const [read, rate, frames] = out.trim().split(" ").map(Number) as [number, number, number];
    return `read ${read} samples at ${rate} Hz (header says ${frames})`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Arm {
  cpu: number;
  wall: number;
  audio: number;
  /** Seconds to synthesise the first chunk. */
  first: number;
}

async function runBare(bare: BareKokoro, bank: VoiceBank, chunks: SpeechChunk[], edges?: { lead: number; tail: number }[]): Promise<Arm> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let audio = 0;
  let first = 0;
  for (const c of chunks) {
    const wave = await bare.run(c.ids, bank.style([VOICE], c.ids.length));
    if (first === 0) first = (performance.now() - t0) / 1000;
    audio += wave.length / RATE;
    if (edges) {
      const s = silenceProfile(wave);
      edges.push({ lead: s.lead, tail: s.tail });
    }
  }
  const arm = { cpu: cpuSeconds(process.cpuUsage(c0)), wall: (performance.now() - t0) / 1000, audio, first };
  await Bun.sleep(100); // the session's threads go idle before the next arm is timed
  return arm;
}

export async function benchSpeech(h: Harness, key: string, dir: string, rounds: number): Promise<void> {
  const bank = VoiceBank.load(join(dir, "voices"));
  const { vocab } = loadVocab(dir);
  const all: SpeechChunk[] = planSpeech(LONG_TEXT, "us", vocab).filter((c) => c.ids.length > 0);
  // CPU rounds on the first sentences (a minute of audio or so on a busy 2-core machine per arm).
  const chunks = all.slice(0, 6);
  const cpuText = chunks.map((c) => c.text).join("").trim();
  const spinning = await BareKokoro.open(dir, true);
  const sleeping = await BareKokoro.open(dir, false);
  try {
    console.log(`\n## voice-82m (${dir}), voice ${VOICE} with lang_code "a" (only Japanese packs exist)\n`);
    console.log(`long text: ${LONG_TEXT.length} characters → ${all.length} chunks; first chunk ${all[0]!.ids.length} phonemes: "${all[0]!.text.trim()}"`);
    await serve(h, key, "Warm up.", "pcm");
    await spinning.run(chunks[0]!.ids, bank.style([VOICE], chunks[0]!.ids.length));
    await sleeping.run(chunks[0]!.ids, bank.style([VOICE], chunks[0]!.ids.length));

    const rows: { spin: Arm; sleep: Arm; ours: Arm; ttfb: number }[] = [];
    const edges: { lead: number; tail: number }[] = [];
    for (let r = 0; r < Math.max(1, rounds); r++) {
      const spin = await runBare(spinning, bank, chunks, r === 0 ? edges : undefined);
      const sleep = await runBare(sleeping, bank, chunks);
      const c0 = process.cpuUsage();
      const s = await serve(h, key, cpuText, "pcm");
      const ours = { cpu: cpuSeconds(process.cpuUsage(c0)), wall: s.totalMs / 1000, audio: s.bytes.length / 2 / RATE, first: s.ttfbMs / 1000 };
      rows.push({ spin, sleep, ours, ttfb: s.ttfbMs });
      await Bun.sleep(100);
    }
    const m = (f: (x: (typeof rows)[number]) => number) => median(rows.map(f));
    const line = (name: string, a: (x: (typeof rows)[number]) => Arm) =>
      `  ${name}${m((x) => a(x).wall).toFixed(2)} s wall, ${m((x) => a(x).cpu).toFixed(2)} CPU s, ${m((x) => a(x).audio).toFixed(2)} s audio → RTF ${m((x) => a(x).wall / a(x).audio).toFixed(3)}, CPU per audio s ${m((x) => a(x).cpu / a(x).audio).toFixed(3)}`;
    console.log(`\nCPU: median of ${rows.length} interleaved rounds, ${chunks.length} chunks (${cpuText.length} characters), same phoneme ids and style rows:`);
    console.log(line("bare ORT (default, spinning threads): ", (x) => x.spin));
    console.log(line("bare ORT (threads sleep, as served): ", (x) => x.sleep));
    console.log(line("server (HTTP, pcm, trimmed + pauses):  ", (x) => x.ours));
    const pct = (f: (x: (typeof rows)[number]) => number) => `${((m(f) - 1) * 100).toFixed(1)}% (per round: ${rows.map((x) => ((f(x) - 1) * 100).toFixed(1) + "%").join(", ")})`;
    console.log(`  serving CPU for the same chunks vs bare ORT default: ${pct((x) => x.ours.cpu / x.spin.cpu)}; vs bare ORT with the server's thread settings: ${pct((x) => x.ours.cpu / x.sleep.cpu)} (target ≤ 5%)`);
    console.log(`  CPU per audio second vs bare default: ${pct((x) => x.ours.cpu / x.ours.audio / (x.spin.cpu / x.spin.audio))} (served audio is shorter: silence trimmed)`);
    console.log(`  first byte: median ${m((x) => x.ttfb).toFixed(0)} ms (first chunk ${all[0]!.ids.length} phonemes); bare ORT's first chunk: ${(m((x) => x.spin.first) * 1000).toFixed(0)} ms default, ${(m((x) => x.sleep.first) * 1000).toFixed(0)} ms as served; first byte / bare first chunk (as served) ${m((x) => x.ttfb / 1000 / x.sleep.first).toFixed(2)}`);

    const long = await serve(h, key, LONG_TEXT, "pcm");
    const served = pcmSamples(long.bytes);
    const out = silenceProfile(served);
    console.log(`\nlong text (${LONG_TEXT.length} characters): first byte ${long.ttfbMs.toFixed(0)} ms, total ${(long.totalMs / 1000).toFixed(2)} s for ${(served.length / RATE).toFixed(2)} s of audio → RTF ${(long.totalMs / 1000 / (served.length / RATE)).toFixed(3)}`);
    console.log(`\nsilence (-40 dBFS, 20 ms windows):`);
    console.log(`  raw model chunks (bare ORT): lead-in median ${median(edges.map((e) => e.lead)).toFixed(2)} s, tail median ${median(edges.map((e) => e.tail)).toFixed(2)} s`);
    const long2 = out.gaps.filter((g) => g >= 0.2);
    console.log(`  served long text: lead-in ${out.lead.toFixed(2)} s (target ≤ 0.1 s), tail ${out.tail.toFixed(2)} s, ${long2.length} gaps ≥ 0.2 s (chunk edges and the model's own pauses), median ${median(long2.concat([0])).toFixed(2)} s, longest ${Math.max(0, ...out.gaps).toFixed(2)} s`);

    const flacText = all.slice(0, 2).map((c) => c.text).join("");
    const flac = await serve(h, key, flacText, "flac");
    const pcm = await serve(h, key, flacText, "pcm");
    console.log(`\nFLAC (first two chunks): ${flac.bytes.length} bytes, pcm of the same text ${pcm.bytes.length / 2} samples; libsndfile: ${await soundfileReads(flac.bytes)}`);
  } finally {
    await spinning.release();
    await sleeping.release();
  }
}
