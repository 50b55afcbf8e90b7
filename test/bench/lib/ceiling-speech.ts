/**
 * Speech in the ceiling benchmark: the server's CPU for one text (HTTP, pcm, every thread of its
 * process) against bare ONNX Runtime with ORT's default session options on the same phoneme ids
 * and style rows (the chunks the server's front end plans), in a child process, and against
 * Python's ORT when REFERENCE_PYTHON is set (what ../shared/real-weights/reference.py speech-cpu
 * measures). Rounds interleave the arms. speech-cpu divides by the samples the model returns for
 * those ids, so the target (≤ 1.05x) is read on the same chunks: the server's CPU against the
 * reference's for the same model audio. The server then trims each chunk's silence (as kokoro-onnx's
 * `create` does by default), so it delivers ~12% less audio for that work; CPU per second of audio
 * delivered is printed beside it.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { planSpeech } from "../../../src/text/frontend";
import { loadVocab, modelFileFor } from "../../../src/engines/speech/engine";
import { frontEndFor, VoiceBank } from "../../../src/engines/speech/voices";
import type { BareSpeechResult } from "./ceiling-child";
import { startServer, type Server, type ServerSpec } from "./ceiling-server";
import { cpuSeconds, loadAverage, snapshot } from "./server-cpu";
import { HARBOUR_PASSAGE } from "./passage";
import { median } from "./load";

export interface SpeechCeilingOptions {
  models: string | undefined;
  specs: ServerSpec[];
  child(mode: string, arg: unknown): Promise<unknown>;
  rounds: number;
}

interface Arm {
  cpu: number;
  audio: number;
}

function pickVoice(dir: string): string {
  const voices = readdirSync(join(dir, "voices")).filter((f) => f.endsWith(".bin")).map((f) => f.slice(0, -4)).sort();
  return process.env.BENCH_VOICE ?? (voices.includes("af_heart") ? "af_heart" : voices[0]!);
}

async function serve(s: Server, voice: string, text: string): Promise<Arm> {
  const english = /^[ab]/.test(voice);
  const before = snapshot(s.pid);
  const res = await fetch(s.url + "/v1/audio/speech", {
    method: "POST",
    headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "voice-82m", voice, input: text, response_format: "pcm", ...(english ? {} : { lang_code: "a" }) }),
  });
  if (res.status !== 200) throw new Error(`speech HTTP ${res.status}: ${await res.text()}`);
  const bytes = (await res.arrayBuffer()).byteLength;
  return { cpu: cpuSeconds(before, snapshot(s.pid)), audio: bytes / 2 / 24_000 };
}

async function python(jobFile: string): Promise<Arm | string> {
  const py = process.env.REFERENCE_PYTHON;
  if (!py) return "not measured (set REFERENCE_PYTHON to a Python with numpy and onnxruntime)";
  const p = Bun.spawn([py, join(import.meta.dir, "speech_reference.py"), jobFile], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) return `failed: ${err.trim().split("\n").at(-1)}`;
  const r = JSON.parse(out.trim().split("\n").at(-1)!) as BareSpeechResult & { ort: string };
  return { cpu: r.cpuSeconds, audio: r.audioSeconds, ort: r.ort } as Arm;
}

export async function benchSpeechCeiling(o: SpeechCeilingOptions): Promise<void> {
  const real = o.models ? join(o.models, "voice-82m") : "";
  const file = real && existsSync(join(real, "voices")) ? modelFileFor(real, "cpu") : null;
  if (!file) {
    console.log("\nspeech: not measured (no SWITCHYARD_MODELS_DIR/voice-82m with a graph and voices/)");
    return;
  }
  const work = mkdtempSync(join(tmpdir(), "switchyard-speech-ceiling-"));
  const servers: Server[] = [];
  try {
    symlinkSync(resolve(real), join(work, "voice-82m"));
    const voice = pickVoice(real);
    const text = HARBOUR_PASSAGE.slice(0, Number(process.env.BENCH_SPEECH_CHARS ?? 600));
    const bank = VoiceBank.load(join(real, "voices"));
    const chunks = planSpeech(text, frontEndFor([voice], /^[ab]/.test(voice) ? undefined : "a"), loadVocab(real).vocab).filter((c) => c.ids.length > 0);
    const job = { model: join(real, file), chunks: chunks.map((c) => ({ ids: c.ids, style: Array.from(bank.style([voice], c.ids.length)) })) };
    const jobFile = join(work, "job.json");
    writeFileSync(jobFile, JSON.stringify(job));
    console.log(`\n## Speech (${real}, graph ${file}, voice ${voice}): ${text.length} characters → ${chunks.length} chunks, ${o.rounds} rounds; load average ${loadAverage()}`);
    for (const spec of o.specs) servers.push(await startServer(spec, work, "voice-82m"));
    for (const s of servers) await serve(s, voice, "Warm up, please.");
    const rows: { bare: Arm; py: Arm | string; ours: Map<string, Arm> }[] = [];
    for (let r = 0; r < o.rounds; r++) {
      const b = (await o.child("bare-speech", job)) as BareSpeechResult | { unavailable: string };
      if ("unavailable" in b && r === 0) console.log(`bare ONNX Runtime: ${b.unavailable}`);
      const py = await python(jobFile);
      const ours = new Map<string, Arm>();
      for (const s of servers) ours.set(s.label, await serve(s, voice, text));
      rows.push({ bare: "unavailable" in b ? { cpu: NaN, audio: NaN } : { cpu: b.cpuSeconds, audio: b.audioSeconds }, py, ours });
    }
    const m = (f: (x: (typeof rows)[number]) => number) => median(rows.map(f));
    const n = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : "–");
    const line = (name: string, cpu: number, audio: number) => `| ${name} | ${n(cpu, 2)} | ${n(audio, 2)} | ${n(cpu / audio, 3)} |`;
    console.log("\n| arm | CPU s | audio s | CPU s per audio s |\n|---|---:|---:|---:|");
    console.log(line("bare ORT (onnxruntime-node, default options), same ids", m((x) => x.bare.cpu), m((x) => x.bare.audio)));
    const py = rows.map((x) => x.py).filter((x): x is Arm & { ort: string } => typeof x !== "string");
    if (py.length) console.log(line(`bare ORT ${py[0]!.ort} (Python, default options), same ids`, median(py.map((x) => x.cpu)), median(py.map((x) => x.audio))));
    else console.log(`| Python ORT: ${rows[0]!.py} | | | |`);
    for (const s of servers) console.log(line(`${s.label} (HTTP, pcm, silence trimmed)`, m((x) => x.ours.get(s.label)!.cpu), m((x) => x.ours.get(s.label)!.audio)));
    for (const s of servers) {
      const ours = (x: (typeof rows)[number]) => x.ours.get(s.label)!;
      const vsNode = rows.map((x) => ours(x).cpu / x.bare.cpu);
      let text = `${s.label}: CPU for the same chunks ${n(median(vsNode), 2)}x bare onnxruntime-node (per round ${vsNode.map((x) => n(x, 2)).join(", ")})`;
      if (py.length) {
        const vsPy = rows.filter((x) => typeof x.py !== "string").map((x) => ours(x).cpu / (x.py as Arm).cpu);
        const perAudio = rows.filter((x) => typeof x.py !== "string").map((x) => ours(x).cpu / ours(x).audio / ((x.py as Arm).cpu / (x.py as Arm).audio));
        text += `, **${median(vsPy).toFixed(2)}x** Python ORT (per round ${vsPy.map((x) => x.toFixed(2)).join(", ")}; target ≤ 1.05x); per second of audio delivered, after the silence trim, ${median(perAudio).toFixed(2)}x`;
      }
      console.log(text);
    }
  } finally {
    for (const s of servers) await s.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
