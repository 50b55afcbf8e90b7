/**
 * Embeddings throughput and latency over real HTTP, with the micro-batching scheduler versus
 * batch size 1, at concurrency 1, 16 and 64 (closed loop: each client sends its next request when
 * the previous one is answered).
 *
 *   ./node_modules/.bin/bun test/bench/embeddings.bench.ts            # test model
 *   BENCH_SECONDS=5 SWITCHYARD_MODELS_DIR=/srv/models ./node_modules/.bin/bun test/bench/embeddings.bench.ts
 *
 * The test model has EmbeddingGemma's signature and, like the real model, more weights than the
 * CPU cache holds (a 768→8192→768 dense head, ~50 MB), so each run streams its weights from
 * memory once whatever the batch size: the cost that batching amortises. When
 * SWITCHYARD_MODELS_DIR holds the real embedding-300m files, the real model is measured too.
 * BENCH_FORMAT=float asks for JSON floats instead of base64.
 *
 * Before the HTTP table it prints the event loop's own work per request, the part that does not
 * scale with the GPU: tokenising the text, and writing the answer, once as the route first did
 * (768 floats as an array through JSON.stringify) and once as it does now (float32-text.ts
 * writeFloat32s, each value's shortest float32 text, or base64, spliced into the body). A
 * one-text request does both in the event loop; requests with more than 1,000 characters or
 * 4 × 768 floats hand them to a tokenizer thread
 * (engine.ts DEFAULT_HAND_OFF). embeddings-ceiling.bench.ts measures the whole server per request.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { writeEmbeddingModel } from "../support/embedding-fixture";
import { DEFAULT_BATCHING, EmbeddingEngine, loadTokenizer, type BatchingOptions } from "../../src/engines/embeddings/engine";
import { encodeEmbedding, toBase64, toFloats, truncateAndNormalise } from "../../src/engines/embeddings/vectors";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const FORMAT = process.env.BENCH_FORMAT === "float" ? "float" : "base64";
const CONCURRENCY = [1, 16, 64];
const WORDS = "the hello world query search result text title none task cat dog".split(" ");

interface Row {
  mode: string;
  concurrency: number;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  meanBatch: number;
}

function sentence(i: number): string {
  const n = 8 + (i % 17);
  return Array.from({ length: n }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(" ");
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function load(h: Harness, modelDir: string, batching: Partial<BatchingOptions>): Promise<void> {
  const s = h.server.services;
  await s.engines.get<EmbeddingEngine>("embedding-300m")?.close();
  s.engines.unregister("embedding-300m");
  // As the server loads it: tokenizer threads as configured (SWITCHYARD_EMBEDDING_TOKENIZER_THREADS).
  s.engines.register(await EmbeddingEngine.load(modelDir, "cpu", s.metrics, batching, "worker", undefined, s.config.embeddingTokenizerThreads));
}

function batchStats(h: Harness): { batches: number; jobs: number } {
  const text = h.server.services.metrics.render();
  const get = (name: string) => Number(text.split("\n").find((l) => l.startsWith(`${name}{scheduler="embedding-300m"}`))?.split(" ").at(-1) ?? 0);
  return { batches: get("switchyard_scheduler_batch_size_count"), jobs: get("switchyard_scheduler_batch_size_sum") };
}

async function run(h: Harness, key: string, mode: string, concurrency: number): Promise<Row> {
  const post = (i: number) =>
    fetch(h.base + "/v1/embeddings", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "embedding-300m", input: sentence(i), encoding_format: FORMAT }),
    }).then(async (r) => {
      if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
      await r.arrayBuffer();
    });
  // Warm-up: JIT, ORT thread pools, allocator arenas.
  await Promise.all(Array.from({ length: Math.max(4, concurrency) }, (_, i) => post(i)));
  const before = batchStats(h);
  const latencies: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  let counter = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const start = performance.now();
        await post(counter++);
        latencies.push(performance.now() - start);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const after = batchStats(h);
  latencies.sort((a, b) => a - b);
  return {
    mode,
    concurrency,
    requests: latencies.length,
    rps: latencies.length / elapsed,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
    meanBatch: (after.jobs - before.jobs) / Math.max(1, after.batches - before.batches),
  };
}

/** Microseconds per call of `f`, median of 5 rounds of `n` calls. */
function usPer(n: number, f: (i: number) => unknown): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) f(i);
    rounds.push(((performance.now() - t0) * 1000) / n);
  }
  return rounds.sort((a, b) => a - b)[2]!;
}

/** The event loop's work per one-text request, outside the model (see the header). */
function mainThreadWork(label: string, modelDir: string, texts: (i: number) => string): void {
  const tok = loadTokenizer(modelDir);
  const v = new Float32Array(768).map((_, i) => Math.sin(i * 0.37) / 20);
  const usage = { prompt_tokens: 50, total_tokens: 50, cost: 0.000001 };
  const old = (format: string) => JSON.stringify({ object: "list", data: [{ object: "embedding", index: 0, embedding: format === "base64" ? toBase64(truncateAndNormalise(v, 768)) : toFloats(truncateAndNormalise(v, 768)) }], model: "embedding-300m", usage });
  const fragment = { float: () => encodeEmbedding(v, { dims: 768, format: "float" }), base64: () => encodeEmbedding(v, { dims: 768, format: "base64" }) };
  const now = (format: "float" | "base64") => `{"object":"list","data":[{"object":"embedding","index":0,"embedding":${fragment[format]()}}],"model":${JSON.stringify("embedding-300m")},"usage":${JSON.stringify(usage)}}`;
  let tokens = 0;
  const tokenise = usPer(2000, (i) => (tokens += tok.encodeText(texts(i)).length));
  console.log(`\n## main-thread work per request, ${label}\n`);
  console.log("| step | µs per request |\n|---|---:|");
  console.log(`| tokenise one text (${(tokens / 10000).toFixed(0)} tokens on average, repeated texts: the tokenizer's cache helps) | ${tokenise.toFixed(1)} |`);
  for (const format of ["float", "base64"] as const) {
    console.log(`| answer, ${format}: as first written (an array of 768 numbers through JSON.stringify) | ${usPer(2000, () => old(format)).toFixed(1)} |`);
    console.log(`| answer, ${format}: now (write the vector's text, splice it) | ${usPer(2000, () => now(format)).toFixed(1)} |`);
  }
}

async function bench(label: string, modelDir: string): Promise<void> {
  const h = await startHarness({ SWITCHYARD_CONCURRENCY_LIMIT: "100000", SWITCHYARD_RATE_LIMIT_RPM: "10000000" });
  try {
    const { key } = await h.account(100_000);
    const rows: Row[] = [];
    const modes: [string, Partial<BatchingOptions>][] = [
      ["batch size 1", { maxBatchSize: 1, maxWaitMs: 0 }],
      [`scheduler (≤${DEFAULT_BATCHING.maxBatchSize} seqs, ≤${DEFAULT_BATCHING.maxBatchTokens} tokens, ${DEFAULT_BATCHING.maxWaitMs} ms wait)`, {}],
    ];
    // The two modes are measured back to back at each concurrency, so a change in background
    // load between cells biases the comparison as little as possible.
    for (const c of CONCURRENCY) {
      for (const [mode, batching] of modes) {
        await load(h, modelDir, batching);
        rows.push(await run(h, key, mode, c));
      }
    }
    console.log(`\n## ${label}  (${SECONDS} s per cell, HTTP + ${FORMAT}, CPU provider)\n`);
    console.log("| mode | concurrency | requests | req/s | p50 ms | p99 ms | mean batch |");
    console.log("|---|---:|---:|---:|---:|---:|---:|");
    for (const r of [...rows].sort((a, b) => a.mode.localeCompare(b.mode) || a.concurrency - b.concurrency)) {
      console.log(`| ${r.mode} | ${r.concurrency} | ${r.requests} | ${r.rps.toFixed(1)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.meanBatch.toFixed(1)} |`);
    }
    for (const c of CONCURRENCY) {
      const one = rows.find((r) => r.concurrency === c && r.mode === "batch size 1")!;
      const sch = rows.find((r) => r.concurrency === c && r.mode !== "batch size 1")!;
      console.log(`concurrency ${c}: scheduler throughput = ${(sch.rps / one.rps).toFixed(2)}x batch size 1`);
    }
  } finally {
    await h.stop();
  }
}

const testModels = mkdtempSync(join(tmpdir(), "switchyard-bench-"));
try {
  const dir = writeEmbeddingModel(testModels, { denseHead: 8192 });
  mainThreadWork("test tokenizer", dir, sentence);
  await bench("test model (tiny EmbeddingGemma-signature ONNX, 768→8192→768 dense head)", dir);
} finally {
  rmSync(testModels, { recursive: true, force: true });
}

const realDir = join(process.env.SWITCHYARD_MODELS_DIR ?? "./models", "embedding-300m");
if (existsSync(join(realDir, "onnx", "model.onnx")) && existsSync(join(realDir, "tokenizer.json"))) {
  mainThreadWork("EmbeddingGemma's tokenizer", realDir, (i) => `${sentence(i)} ${sentence(i + 5)} ${sentence(i + 11)}`);
  await bench(`REAL EmbeddingGemma-300m from ${realDir}`, realDir);
} else {
  console.log(`\nreal model: not measured (no embedding-300m files in ${realDir}; run 'switchyard models pull' or set SWITCHYARD_MODELS_DIR)`);
}
