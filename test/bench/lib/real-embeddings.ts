/**
 * embedding-300m on real weights, for test/bench/real-models.bench.ts: the server over HTTP
 * against bare ONNX Runtime (onnxruntime-node, default session options, in this process) on the
 * same token ids, measured interleaved in one run so background load hits both alike.
 *   - concurrency 1: one request at a time vs bare batch-1 runs, alternating request by request;
 *   - concurrency 16 and 64: that many closed-loop HTTP clients vs bare runs of batches of the
 *     same texts (as many as the server batches at most), alternating in rounds;
 *   - cosine of the server's vectors against bare ONNX Runtime's, and against an independent
 *     Python reference (tokenizers + onnxruntime from PyPI) when REFERENCE_PYTHON is set.
 */
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import type { Harness } from "../../support/harness";
import { DEFAULT_BATCHING, loadTokenizer, type EmbeddingEngine } from "../../../src/engines/embeddings/engine";
import type { EmbeddingTokenizer } from "../../../src/engines/embeddings/tokenizer";
import { median } from "./load";

const SUBJECTS = ["the committee", "a small team", "our new intern", "the regional office", "every reviewer", "the finance group", "an outside auditor", "the board"];
const ACTIONS = ["reviewed the proposal", "asked for a revised budget", "read the quarterly report", "questioned the schedule", "approved the hiring plan", "found two errors"];
const TAILS = ["by next quarter.", "before the holidays, as agreed last month.", ".", "and sent it back with comments on every page of the appendix.", "without much discussion."];

/** Texts of 10–40 tokens, varied like real traffic. */
export function benchTexts(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${SUBJECTS[i % SUBJECTS.length]} ${ACTIONS[(i * 5) % ACTIONS.length]} ${TAILS[(i * 3) % TAILS.length]} (${i})`);
}

class BareEmbeddings {
  private constructor(private readonly session: ort.InferenceSession, readonly padId: number) {}
  static async open(dir: string, padId: number): Promise<BareEmbeddings> {
    return new BareEmbeddings(await ort.InferenceSession.create(join(dir, "onnx", "model.onnx"), { executionProviders: ["cpu"] }), padId);
  }
  /** One batch, right-padded to its longest sequence, as a plain ORT user writes it. */
  async run(batch: number[][]): Promise<Float32Array[]> {
    const cols = Math.max(...batch.map((s) => s.length));
    const ids = new BigInt64Array(batch.length * cols).fill(BigInt(this.padId));
    const mask = new BigInt64Array(batch.length * cols);
    batch.forEach((s, r) => s.forEach((id, c) => ((ids[r * cols + c] = BigInt(id)), (mask[r * cols + c] = 1n))));
    const dims = [batch.length, cols];
    const out = await this.session.run({ input_ids: new ort.Tensor("int64", ids, dims), attention_mask: new ort.Tensor("int64", mask, dims) }, ["sentence_embedding"]);
    const data = out.sentence_embedding!.data as Float32Array;
    const d = data.length / batch.length;
    return batch.map((_, r) => data.slice(r * d, (r + 1) * d));
  }
  release(): Promise<void> {
    return this.session.release();
  }
}

async function post(h: Harness, key: string, input: string | string[]): Promise<Float32Array[]> {
  const res = await fetch(h.base + "/v1/embeddings", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "embedding-300m", input, encoding_format: "base64" }),
  });
  if (res.status !== 200) throw new Error(`embeddings HTTP ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as { data: { embedding: string }[] };
  return body.data.map((d) => {
    const b = Buffer.from(d.embedding, "base64");
    return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  });
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) (ab += a[i]! * b[i]!), (aa += a[i]! ** 2), (bb += b[i]! ** 2);
  return ab / Math.sqrt(aa * bb);
}

async function pythonVectors(dir: string, texts: string[]): Promise<Float32Array[] | string> {
  const python = process.env.REFERENCE_PYTHON;
  if (!python) return "not measured (set REFERENCE_PYTHON to a Python with tokenizers and onnxruntime)";
  const p = Bun.spawn([python, join(import.meta.dir, "embeddings_reference.py"), dir], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  p.stdin.write(JSON.stringify(texts));
  await p.stdin.end();
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) return `failed: ${err.trim().split("\n").at(-1)}`;
  return (JSON.parse(out) as number[][]).map((v) => Float32Array.from(v));
}

/** The server's own account of time not spent in the engine (switchyard_gateway_overhead_seconds). */
function gatewayOverhead(h: Harness): { sum: number; count: number } {
  const text = h.server.services.metrics.render();
  const get = (suffix: string) => Number(new RegExp(`^switchyard_gateway_overhead_seconds_${suffix}\\{endpoint="/v1/embeddings"\\} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  return { sum: get("sum"), count: get("count") };
}

interface Throughput {
  ours: number;
  bare: number;
  oursPerCpu: number;
  barePerCpu: number;
}

const cpu = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;

/**
 * Both sessions let their threads spin-wait for a moment after a run (ORT's default, and the
 * server's choice for this model); on a small machine the one measured next would share the
 * cores with that spinning. A pause between the two keeps each measurement to itself.
 */
const settle = () => Bun.sleep(25);

/** `concurrency` closed-loop clients for `seconds`; tokens per second of model input. */
async function serverTokensPerSecond(h: Harness, key: string, texts: string[], tokens: number[], concurrency: number, seconds: number): Promise<number> {
  let next = 0;
  let done = 0;
  const deadline = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const i = next++ % texts.length;
        await post(h, key, texts[i]!);
        done += tokens[i]!;
      }
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}

async function bareTokensPerSecond(bare: BareEmbeddings, seqs: number[][], batch: number, seconds: number): Promise<number> {
  let next = 0;
  let done = 0;
  const deadline = performance.now() + seconds * 1000;
  const t0 = performance.now();
  while (performance.now() < deadline) {
    const b = Array.from({ length: batch }, () => seqs[next++ % seqs.length]!);
    await bare.run(b);
    done += b.reduce((n, s) => n + s.length, 0);
  }
  return done / ((performance.now() - t0) / 1000);
}

export async function benchEmbeddings(h: Harness, key: string, dir: string, seconds: number): Promise<void> {
  const tokenizer: EmbeddingTokenizer = loadTokenizer(dir);
  const bare = await BareEmbeddings.open(dir, tokenizer.padId);
  try {
    const texts = benchTexts(256);
    const seqs = texts.map((t) => tokenizer.encodeText(t));
    const tokens = seqs.map((s) => s.length);
    console.log(`\n## embedding-300m (${dir})\n`);
    console.log(`texts: ${texts.length}, ${Math.min(...tokens)}–${Math.max(...tokens)} tokens (mean ${(tokens.reduce((a, b) => a + b, 0) / tokens.length).toFixed(1)})`);

    // Cosine: the server against bare ORT (same ids) and against the Python reference.
    const sample = texts.slice(0, 24);
    const served = await post(h, key, sample);
    const bareVecs = (await Promise.all(sample.map((_, i) => bare.run([seqs[i]!])))).map((v) => v[0]!);
    const cosBare = Math.min(...served.map((v, i) => cosine(v, bareVecs[i]!)));
    const py = await pythonVectors(dir, sample);
    const cosPy = typeof py === "string" ? py : Math.min(...served.map((v, i) => cosine(v, py[i]!))).toFixed(7);
    console.log(`cosine, server vs bare ONNX Runtime (same ids), min over ${sample.length}: ${cosBare.toFixed(7)}`);
    console.log(`cosine, server vs Python reference (tokenizers + onnxruntime), min over ${sample.length}: ${cosPy}`);

    // Concurrency 1: bare ORT, the engine called in-process (scheduler + worker thread), and an
    // HTTP request, one after another on the same text, round after round.
    const engine = h.server.services.engines.get<EmbeddingEngine>("embedding-300m")!;
    for (let i = 0; i < 6; i++) (await bare.run([seqs[i]!]), await engine.embed([seqs[i]!]), await post(h, key, texts[i]!));
    const bareMs: number[] = [];
    const engineDiff: number[] = [];
    const httpDiff: number[] = [];
    const httpMs: number[] = [];
    const before = gatewayOverhead(h);
    const rounds = Math.max(30, Math.round(seconds * 15));
    for (let i = 0; i < rounds; i++) {
      const j = i % texts.length;
      let t = performance.now();
      await bare.run([seqs[j]!]);
      const b = performance.now() - t;
      await settle();
      t = performance.now();
      await engine.embed([seqs[j]!]);
      const e = performance.now() - t;
      await settle();
      t = performance.now();
      await post(h, key, texts[j]!);
      const o = performance.now() - t;
      await settle();
      bareMs.push(b);
      httpMs.push(o);
      engineDiff.push(e - b);
      httpDiff.push(o - b);
    }
    const after = gatewayOverhead(h);
    const meanTokens = tokens.slice(0, rounds).reduce((a, b) => a + b, 0) / Math.min(rounds, tokens.length);
    console.log(`\nconcurrency 1 (${rounds} rounds of bare ORT, engine in-process, HTTP request, on the same text):`);
    console.log(`  bare ORT batch 1: median ${median(bareMs).toFixed(1)} ms = ${(meanTokens / (median(bareMs) / 1000)).toFixed(0)} tokens/s`);
    console.log(`  server over HTTP: median ${median(httpMs).toFixed(1)} ms = ${(meanTokens / (median(httpMs) / 1000)).toFixed(0)} tokens/s`);
    console.log(`  overhead over bare ORT, median of paired differences: engine (scheduler + worker thread) ${median(engineDiff).toFixed(1)} ms, HTTP request ${median(httpDiff).toFixed(1)} ms (target ≤ 3 ms)`);
    console.log(`  server-side time outside the engine (parse, auth, tokenise, billing with its fsync, JSON), mean: ${(((after.sum - before.sum) / Math.max(1, after.count - before.count)) * 1000).toFixed(1)} ms`);

    for (const c of [16, 64]) {
      const batch = Math.min(c, DEFAULT_BATCHING.maxBatchSize);
      await serverTokensPerSecond(h, key, texts, tokens, c, 1); // warm-up: arenas for this batch size
      await bareTokensPerSecond(bare, seqs, batch, 1);
      const rows: Throughput[] = [];
      for (let r = 0; r < 5; r++) {
        let c0 = process.cpuUsage();
        const b = await bareTokensPerSecond(bare, seqs, batch, seconds);
        const bCpu = cpu(process.cpuUsage(c0));
        await settle();
        c0 = process.cpuUsage();
        const o = await serverTokensPerSecond(h, key, texts, tokens, c, seconds);
        const oCpu = cpu(process.cpuUsage(c0));
        await settle();
        rows.push({ ours: o, bare: b, oursPerCpu: (o * seconds) / oCpu, barePerCpu: (b * seconds) / bCpu });
      }
      const ours = median(rows.map((x) => x.ours));
      const bareT = median(rows.map((x) => x.bare));
      console.log(`\nconcurrency ${c}: server ${ours.toFixed(0)} tokens/s, bare ORT batches of ${batch} ${bareT.toFixed(0)} tokens/s (medians of ${rows.length} rounds: ${(ours / bareT).toFixed(2)}x); median of the per-round ratios ${median(rows.map((x) => x.ours / x.bare)).toFixed(2)}x (per round: ${rows.map((x) => (x.ours / x.bare).toFixed(2)).join(", ")}; target ≥ 1.0x at 64)`);
      console.log(`  tokens per CPU second (less sensitive to other load; the server's includes its HTTP clients, which run in this process): server ${median(rows.map((x) => x.oursPerCpu)).toFixed(0)}, bare ${median(rows.map((x) => x.barePerCpu)).toFixed(0)} → ${median(rows.map((x) => x.oursPerCpu / x.barePerCpu)).toFixed(2)}x`);
    }
  } finally {
    await bare.release();
  }
}
