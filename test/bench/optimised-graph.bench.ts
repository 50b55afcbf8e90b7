/**
 * The optimised graph (src/engines/optimised-graph.ts) against the plain one, per model: session
 * load time (plain, optimised graph made, optimised graph reused), one input's latency on each
 * (median of 21 runs, CPU provider) and the cosine between their outputs.
 *
 *   ./node_modules/.bin/bun test/bench/optimised-graph.bench.ts
 *   SWITCHYARD_MODELS_DIR=/srv/models ./node_modules/.bin/bun test/bench/optimised-graph.bench.ts
 *
 * With real weights it writes model.opt.cpu.ort<version>.onnx (+ _data, as large as the weights)
 * beside the model, as the server does. test/gpu-check/ measures the CUDA graph's latency.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSession, type CreatedSession } from "../../src/engines/onnx-session";
import { runSession, type TensorData } from "../../src/engines/onnx-runner";
import { EMBEDDING_SESSION_TUNING } from "../../src/engines/embeddings/model";
import { loadTokenizer } from "../../src/engines/embeddings/engine";
import { writeEmbeddingModel } from "../support/embedding-fixture";

const TEXT = "The harbour was quiet before dawn; fishing boats rocked against the pier while gulls circled the masts and the first light touched the water.";

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

async function oneInput(s: CreatedSession, feeds: () => Record<string, TensorData>): Promise<{ ms: number; out: Float32Array }> {
  for (let i = 0; i < 3; i++) await runSession(s, feeds(), ["sentence_embedding"]);
  const times: number[] = [];
  let out: Float32Array = new Float32Array();
  for (let i = 0; i < 21; i++) {
    const t0 = performance.now();
    out = (await runSession(s, feeds(), ["sentence_embedding"])).sentence_embedding!.data as Float32Array;
    times.push(performance.now() - t0);
  }
  return { ms: times.sort((a, b) => a - b)[10]!, out };
}

function cosine(a: Float32Array, b: Float32Array): number {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) (ab += a[i]! * b[i]!), (aa += a[i]! * a[i]!), (bb += b[i]! * b[i]!);
  return ab / Math.sqrt(aa * bb);
}

async function bench(label: string, dir: string): Promise<void> {
  const path = join(dir, "onnx", "model.onnx");
  for (const f of readdirSync(join(dir, "onnx")).filter((f) => f.includes(".opt."))) rmSync(join(dir, "onnx", f));
  const ids = loadTokenizer(dir).encodeText(TEXT);
  const feeds = (): Record<string, TensorData> => ({
    input_ids: { type: "int64", data: BigInt64Array.from(ids, BigInt), dims: [1, ids.length] },
    attention_mask: { type: "int64", data: new BigInt64Array(ids.length).fill(1n), dims: [1, ids.length] },
  });
  const [plain, plainMs] = await timed(() => createSession(path, "cpu", EMBEDDING_SESSION_TUNING));
  const a = await oneInput(plain, feeds);
  await plain.session.release();
  const [made, madeMs] = await timed(() => createSession(path, "cpu", { ...EMBEDDING_SESSION_TUNING, optimisedGraph: true }));
  await made.session.release();
  const [reused, reusedMs] = await timed(() => createSession(path, "cpu", { ...EMBEDDING_SESSION_TUNING, optimisedGraph: true }));
  const b = await oneInput(reused, feeds);
  await reused.session.release();
  // The plain graph again, so neither side is only ever measured first (a cold process).
  const [again, againMs] = await timed(() => createSession(path, "cpu", EMBEDDING_SESSION_TUNING));
  const c = await oneInput(again, feeds);
  await again.session.release();
  console.log(`\n## ${label}: one ${ids.length}-token input, CPU\n`);
  console.log("| graph | session load ms | one input ms (median of 21) |\n|---|---:|---:|");
  console.log(`| plain (optimised in memory) | ${plainMs.toFixed(0)} | ${a.ms.toFixed(2)} |`);
  console.log(`| optimised graph, first load (${made.graph}) | ${madeMs.toFixed(0)} | |`);
  console.log(`| optimised graph, later loads (${reused.graph}) | ${reusedMs.toFixed(0)} | ${b.ms.toFixed(2)} |`);
  console.log(`| plain again | ${againMs.toFixed(0)} | ${c.ms.toFixed(2)} |`);
  console.log(`cosine plain vs optimised: ${cosine(a.out, b.out).toFixed(7)}`);
}

const tmp = mkdtempSync(join(tmpdir(), "switchyard-opt-bench-"));
try {
  await bench("test model (tiny EmbeddingGemma signature, 4 layers)", writeEmbeddingModel(tmp, { layers: 4, denseHead: 3072 }));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
const real = join(process.env.SWITCHYARD_MODELS_DIR ?? "./models", "embedding-300m");
if (existsSync(join(real, "onnx", "model.onnx"))) await bench(`EmbeddingGemma-300m from ${real}`, real);
else console.log(`\nreal model: not measured (no ${join(real, "onnx", "model.onnx")})`);
