/**
 * The ceiling benchmark's child processes, one job each, so that what they cost is measured apart
 * from the server and from the benchmark itself: the fallback HTTP client, and bare ONNX Runtime
 * (onnxruntime-node, ORT's default session options: the floor a plain user of ORT gets) on the
 * same ids the server is given. Each answers one JSON line on stdout. CPU is the child's own
 * (process.cpuUsage: every thread, ORT's pool included), taken around the timed part only.
 */
import { fetchLoad, type LoadSpec } from "./http-load";

export interface BareEmbedJob {
  model: string;
  ids: number[];
  batch: number;
  seconds: number;
  padId: number;
}

export interface BareEmbedResult {
  runs: number;
  tokensPerSecond: number;
  cpuSeconds: number;
  p50ms: number;
}

export interface BareSpeechJob {
  model: string;
  chunks: { ids: number[]; style: number[] }[];
}

export interface BareSpeechResult {
  audioSeconds: number;
  cpuSeconds: number;
  wallSeconds: number;
}

export type Unavailable = { unavailable: string };

const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function ort(): Promise<typeof import("onnxruntime-node") | Unavailable> {
  try {
    return await import("onnxruntime-node");
  } catch (e) {
    return { unavailable: `onnxruntime-node cannot be loaded here (${String((e as Error)?.message ?? e).split("\n")[0]})` };
  }
}

async function bareEmbed(job: BareEmbedJob): Promise<BareEmbedResult | Unavailable> {
  const o = await ort();
  if ("unavailable" in o) return o;
  const session = await o.InferenceSession.create(job.model, { executionProviders: ["cpu"] });
  const n = job.ids.length;
  const ids = new BigInt64Array(job.batch * n);
  for (let r = 0; r < job.batch; r++) for (let c = 0; c < n; c++) ids[r * n + c] = BigInt(job.ids[c]!);
  const mask = new BigInt64Array(job.batch * n).fill(1n);
  const run = () => session.run({ input_ids: new o.Tensor("int64", ids, [job.batch, n]), attention_mask: new o.Tensor("int64", mask, [job.batch, n]) }, ["sentence_embedding"]);
  for (let i = 0; i < 3; i++) await run();
  const times: number[] = [];
  const c0 = cpuNow();
  const t0 = performance.now();
  while (performance.now() - t0 < job.seconds * 1000) {
    const s = performance.now();
    await run();
    times.push(performance.now() - s);
  }
  const wall = (performance.now() - t0) / 1000;
  const cpuSeconds = cpuNow() - c0;
  await session.release();
  times.sort((a, b) => a - b);
  return { runs: times.length, tokensPerSecond: (times.length * job.batch * n) / wall, cpuSeconds, p50ms: times[Math.floor(times.length / 2)]! };
}

async function bareSpeech(job: BareSpeechJob): Promise<BareSpeechResult | Unavailable> {
  const o = await ort();
  if ("unavailable" in o) return o;
  const session = await o.InferenceSession.create(job.model, { executionProviders: ["cpu"] });
  const idsName = session.inputNames.find((x) => /tokens|input_ids/.test(x)) ?? session.inputNames[0]!;
  const styleName = session.inputNames.find((x) => /style|ref_s|voice/.test(x)) ?? "style";
  const speedName = session.inputNames.find((x) => /speed/.test(x));
  const run = async (c: BareSpeechJob["chunks"][number]) => {
    const tokens = BigInt64Array.from([0, ...c.ids, 0], BigInt);
    const feeds: Record<string, import("onnxruntime-node").Tensor> = {
      [idsName]: new o.Tensor("int64", tokens, [1, tokens.length]),
      [styleName]: new o.Tensor("float32", Float32Array.from(c.style), [1, c.style.length]),
    };
    if (speedName) feeds[speedName] = new o.Tensor("float32", Float32Array.of(1), [1]);
    const out = await session.run(feeds);
    return (out[session.outputNames[0]!]!.data as Float32Array).length;
  };
  await run(job.chunks[0]!);
  const c0 = cpuNow();
  const t0 = performance.now();
  let samples = 0;
  for (const c of job.chunks) samples += await run(c);
  const result = { audioSeconds: samples / 24_000, cpuSeconds: cpuNow() - c0, wallSeconds: (performance.now() - t0) / 1000 };
  await session.release();
  return result;
}

/** Runs the job named by argv (`--child MODE FILE`, FILE holding the job's JSON) and prints its answer. */
export async function runChild(mode: string, file: string): Promise<void> {
  const job = JSON.parse(await Bun.file(file).text());
  const out = mode === "load" ? await fetchLoad(job as LoadSpec) : mode === "bare-embed" ? await bareEmbed(job as BareEmbedJob) : mode === "bare-speech" ? await bareSpeech(job as BareSpeechJob) : { unavailable: `unknown mode ${mode}` };
  console.log(JSON.stringify(out));
}
