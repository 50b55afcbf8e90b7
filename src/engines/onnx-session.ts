/**
 * Creating an ONNX Runtime session with the configured execution provider. "cuda" is tried first
 * when asked for; if its provider library is missing (onnxruntime-node ships it separately) the
 * session is created on CPU and the reason is returned, so the engine can log a clear fallback.
 */
import { loadOrt, type OrtModule } from "./onnx-runtime";
import { ensureOptimisedGraph } from "./optimised-graph";
import { floatConvsGraph } from "./graph/float-convs-file";
import { fusedGraph } from "./graph/transformer-fusions-file";
import type { GraphSource } from "./graph/derived-graph-file";
import type * as Ort from "onnxruntime-node";

export interface CreatedSession {
  ort: OrtModule;
  session: Ort.InferenceSession;
  /** The provider actually in use. */
  provider: "cpu" | "cuda";
  /** Set when cuda was asked for but could not be used. */
  fallback?: string;
  /** The optimised graph's fate when one was asked for ("made", "reused", or why not). */
  graph?: string;
  /** The float-convolution graph's fate when one was asked for and the model has quantised convolutions. */
  floatConvs?: string;
  /** The fused graph's fate when one was asked for on this provider and the model has what it fuses. */
  fusions?: string;
}

/**
 * How an engine wants its session's threads. ORT's intra-op threads spin-wait between the
 * parallel parts of a run by default; without spinning every operator wakes sleeping threads,
 * which on a small model adds milliseconds per run (measured on embedding-300m at batch 1:
 * ~10 ms of a ~40 ms run, test/bench/real-models.bench.ts). ORT's threads also go on spinning
 * after a run ends, so under steady traffic (a run every few milliseconds) they never sleep: on
 * a 2-core machine serving a model that costs nothing, that spinning was ~45% of the server's
 * CPU (225 of 470 µs per request, test/bench/embeddings-ceiling.bench.ts). A spinning session
 * here therefore spins only while a run lasts (`session.force_spinning_stop`). The price is paid
 * one request at a time: the real embedding-300m on 2 CPU cores at concurrency 1 added 2.8–6.4 ms
 * to bare ONNX Runtime's batch-1 p50 of 43–47 ms with it, 0.9 ms with ORT's spinning after runs
 * (embeddings-ceiling.bench.ts, BENCH_ONLY=real, 2026-11-28). Each engine picks what its
 * measurements favour.
 */
export interface SessionTuning {
  /** Let intra-op threads spin while a run lasts (ORT's default, without its spinning after the run). Default here: false. */
  spinning?: boolean;
  /** Intra-op threads; 0 or absent lets ORT choose (one per physical core). */
  intraOpThreads?: number;
  /**
   * Load the optimised graph kept beside the model (made on first load; optimised-graph.ts).
   * Default here: false (the plain graph, optimised in memory at every load).
   */
  optimisedGraph?: boolean;
  /**
   * Providers on which the plain graph is loaded although optimisedGraph is on. ORT writes the
   * saved graph's nodes in an order of its own, and runs a graph's nodes in its file's order
   * wherever their inputs allow, so the same nodes can run in a different order from the saved
   * file than from the model. For embedding-300m on CPU that order ran 2–5% slower (bare ORT,
   * batch 32, rounds interleaved with the plain graph: 0.95–0.98x, also for a file ORT saved
   * without optimising; that file with the model's node order put back: 1.00x, as the plain graph
   * against itself), while the plain graph costs ~0.1–0.4 s more at start-up (1.4 s in all).
   */
  plainGraphOn?: readonly ("cpu" | "cuda")[];
  /**
   * Run dynamically quantised convolutions as float ones (graph/float-convs.ts; the graph is kept
   * beside the model). Default here: false.
   */
  floatConvs?: boolean;
  /**
   * Providers on which a transformer encoder's graph is loaded with the fusions ORT does not make
   * itself (graph/transformer-fusions.ts; the graph is kept beside the model). On embedding-300m
   * on CPU: 1.04–1.08x the plain graph's tokens/s in bare ORT (batch 32). CUDA is unmeasured, and
   * keeps the plain graph.
   */
  fusionsOn?: readonly ("cpu" | "cuda")[];
}

/** The ORT version in optimised graphs' names. */
export function ortVersion(ort: OrtModule): string {
  const v = ort.env.versions as { node?: string; common?: string } | undefined;
  return v?.node ?? v?.common ?? "unknown";
}

/**
 * Opens `modelPath` with `options`, through its optimised graph when asked (already fused; the
 * session's own level "all" then only adds the hardware's layout steps); should that file fail
 * to load, the plain graph is.
 */
async function open(ort: OrtModule, modelPath: string, provider: "cpu" | "cuda", options: Ort.InferenceSession.SessionOptions, optimised: boolean): Promise<{ session: Ort.InferenceSession; graph?: string }> {
  if (!optimised) return { session: await ort.InferenceSession.create(modelPath, options) };
  const g = await ensureOptimisedGraph(modelPath, provider, ortVersion(ort), options, (p, o) => ort.InferenceSession.create(p, o));
  if (!g.optimised) return { session: await ort.InferenceSession.create(modelPath, options), graph: g.note };
  try {
    return { session: await ort.InferenceSession.create(g.path, options), graph: g.note };
  } catch (e) {
    const why = String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 200);
    return { session: await ort.InferenceSession.create(modelPath, options), graph: `optimised graph failed to load (${why}); optimising in memory` };
  }
}

/** The session options every engine's session starts from (provider and graph file aside). */
export function baseSessionOptions(tuning: SessionTuning): Ort.InferenceSession.SessionOptions {
  const spin = tuning.spinning ? "1" : "0";
  return {
    graphOptimizationLevel: "all",
    ...(tuning.intraOpThreads ? { intraOpNumThreads: tuning.intraOpThreads } : {}),
    // force_spinning_stop: the threads stop spinning as soon as the last concurrent run returns.
    extra: { session: { intra_op: { allow_spinning: spin }, inter_op: { allow_spinning: spin }, force_spinning_stop: "1" } },
  };
}

type GraphNotes = Pick<CreatedSession, "floatConvs" | "fusions">;
/** A graph to load, and which derived graph it is (its note goes under that name). */
type GraphChoice = { source: GraphSource; kind?: keyof GraphNotes };

/**
 * The graph a provider loads: the float-convolution graph (made once for every provider), the
 * fused graph on the providers that want it, or the model itself.
 */
function graphChooser(modelPath: string, tuning: SessionTuning): (provider: "cpu" | "cuda") => GraphChoice {
  if (tuning.floatConvs) {
    const source = floatConvsGraph(modelPath);
    return () => ({ source, kind: "floatConvs" });
  }
  return (provider) => (tuning.fusionsOn?.includes(provider) ? { source: fusedGraph(modelPath), kind: "fusions" } : { source: { path: modelPath } });
}

/** Options for a graph loaded from bytes: its external data is in the model's folder. */
function externalDataIn(dir: string, options: Ort.InferenceSession.SessionOptions): Ort.InferenceSession.SessionOptions {
  const extra = (options.extra ?? {}) as { session?: Record<string, unknown> };
  return { ...options, extra: { ...extra, session: { ...extra.session, model_external_initializers_file_folder_path: dir } } };
}

export async function createSession(modelPath: string, provider: "cpu" | "cuda", tuning: SessionTuning = {}): Promise<CreatedSession> {
  const ort = await loadOrt();
  const base = baseSessionOptions(tuning);
  const graphFor = graphChooser(modelPath, tuning);
  // A graph only in memory (its folder could not be written) has no optimised graph saved beside it.
  const openSource = async (source: GraphSource, p: "cpu" | "cuda", options: Ort.InferenceSession.SessionOptions): Promise<{ session: Ort.InferenceSession; graph?: string }> => {
    if (source.bytes) return { session: await ort.InferenceSession.create(source.bytes, externalDataIn(source.dir, options)) };
    const plainHere = tuning.optimisedGraph === true && tuning.plainGraphOn?.includes(p) === true;
    const opened = await open(ort, source.path, p, options, tuning.optimisedGraph === true && !plainHere);
    return plainHere ? { session: opened.session, graph: `plain graph on ${p} (it runs faster there)` } : opened;
  };
  // A derived graph that fails to load (an ORT build without an operator it uses) gives way to the model's own.
  const load = async (p: "cpu" | "cuda", options: Ort.InferenceSession.SessionOptions): Promise<{ session: Ort.InferenceSession; graph?: string; notes: GraphNotes }> => {
    const { source, kind } = graphFor(p);
    const note = (text: string | undefined): GraphNotes => (kind && text ? { [kind]: text } : {});
    try {
      return { ...(await openSource(source, p, options)), notes: note(source.note) };
    } catch (e) {
      if (source.path === modelPath) throw e;
      const why = String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 200);
      return { ...(await openSource({ path: modelPath }, p, options)), notes: note(`derived graph failed to load (${why}); the model's own graph`) };
    }
  };
  if (provider === "cuda") {
    try {
      // ORT's own log line for a missing CUDA library is noisy; we log one clear fallback instead.
      const { session, graph, notes } = await load("cuda", { ...base, logSeverityLevel: 4, executionProviders: ["cuda"] });
      return { ort, session, provider: "cuda", ...(graph ? { graph } : {}), ...notes };
    } catch (e) {
      const reason = String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 300);
      const { session, graph, notes } = await load("cpu", { ...base, executionProviders: ["cpu"] });
      return { ort, session, provider: "cpu", fallback: `CUDA execution provider unavailable (${reason}); using cpu`, ...(graph ? { graph } : {}), ...notes };
    }
  }
  const { session, graph, notes } = await load("cpu", { ...base, executionProviders: ["cpu"] });
  return { ort, session, provider: "cpu", ...(graph ? { graph } : {}), ...notes };
}

/** Name, element type and shape of each input and output, read from the session. */
export function describeIo(meta: readonly Ort.InferenceSession.ValueMetadata[]): { name: string; type?: string; shape?: (number | string)[] }[] {
  return meta.map((m) => (m.isTensor ? { name: m.name, type: m.type, shape: [...m.shape] } : { name: m.name }));
}
