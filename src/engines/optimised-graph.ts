/**
 * The optimised graph of a model, made once and kept beside it. ONNX Runtime rewrites a graph
 * when it creates a session (constant folding, then the transformer fusions for attention,
 * layer norm, GELU and the like, then CPU layout changes); on a transformer of ~2,200 nodes that
 * rewrite costs seconds at every load. ORT can save the rewritten graph (session option
 * `optimizedModelFilePath`); this module saves it once per provider and ORT version, as
 * `model.opt.<provider>.ort<version>.onnx` (its weights in `… .onnx_data` beside it), and later
 * loads open that file. It is saved at level "extended" (the fusions, which depend on the
 * provider and ORT version only): ORT's docs warn that the layout changes of level "all" depend on
 * the hardware, and a models folder may be shared between machines; those cheap last steps are
 * redone at each load, which keeps level "all".
 *
 * The file depends on the provider (its fusions and layouts are the provider's) and on the ORT
 * version (contrib operators change between versions), so both are in its name: a new ORT
 * version makes a new file, and the files of older versions are deleted when it is written.
 * Writing goes through a private temporary folder beside the model and ends with renames, so a
 * crash or a second process never leaves a half-written graph under the final name. When the
 * folder is read-only or saving fails, the plain graph is used (optimised in memory, as before)
 * and the reason is returned for the engine to log. See README "Running on a GPU".
 */
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type * as Ort from "onnxruntime-node";

export type Provider = "cpu" | "cuda";

/** The model file's name without `.onnx`: what the graphs kept beside it are named after. */
export function graphStem(modelFile: string): string {
  return basename(modelFile).replace(/\.onnx$/, "");
}

/** `model.opt.cuda.ort1.30.0.onnx` for `model.onnx`. */
export function optimisedName(modelFile: string, provider: Provider, ortVersion: string): string {
  return `${graphStem(modelFile)}.opt.${provider}.ort${ortVersion}.onnx`;
}

export interface OptimisedGraph {
  /** The file to load. */
  path: string;
  /** Whether `path` is the saved optimised graph (else the plain model). */
  optimised: boolean;
  /** "made", "reused", or why the plain graph is used ("disabled", or a failure). */
  note: string;
}

type CreateSession = (path: string, options: Ort.InferenceSession.SessionOptions) => Promise<Ort.InferenceSession>;

/** Older versions' files of the same model and provider (never the current one). */
function staleFiles(dir: string, modelFile: string, provider: Provider, current: string): string[] {
  const prefix = `${graphStem(modelFile)}.opt.${provider}.ort`;
  try {
    return readdirSync(dir).filter((f) => f.startsWith(prefix) && !f.startsWith(current));
  } catch {
    return [];
  }
}

/**
 * The optimised graph for `modelPath` on `provider`: reused when present, else made now by
 * creating one throw-away session with `optimizedModelFilePath` (the options are the caller's,
 * providers included, since the fusions depend on them). Never throws: on any failure it
 * answers the plain model with the reason.
 */
export async function ensureOptimisedGraph(
  modelPath: string,
  provider: Provider,
  ortVersion: string,
  options: Ort.InferenceSession.SessionOptions,
  create: CreateSession,
): Promise<OptimisedGraph> {
  const dir = dirname(modelPath);
  const name = optimisedName(modelPath, provider, ortVersion);
  const target = join(dir, name);
  try {
    // A graph older than the model it came from is stale (the model was replaced).
    if (existsSync(target) && statSync(target).mtimeMs >= statSync(modelPath).mtimeMs) return { path: target, optimised: true, note: "reused" };
  } catch {
    // Unreadable: make it again below.
  }
  let tmp: string | null = null;
  try {
    tmp = mkdtempSync(join(dir, ".opt-"));
    const dataName = `${name}_data`;
    const session = await create(modelPath, {
      ...options,
      graphOptimizationLevel: "extended",
      optimizedModelFilePath: join(tmp, name),
      extra: {
        ...(options.extra as Record<string, unknown> | undefined),
        session: {
          ...((options.extra as { session?: Record<string, unknown> } | undefined)?.session ?? {}),
          // Weights go to a file of their own (a 1.2 GB model would crowd protobuf's 2 GB limit).
          optimized_model_external_initializers_file_name: dataName,
          optimized_model_external_initializers_min_size_in_bytes: "1024",
        },
      },
    });
    await session.release();
    if (!existsSync(join(tmp, name))) throw new Error("ONNX Runtime wrote no optimised graph");
    // The weights first, the graph last: a graph under its final name always has its weights.
    if (existsSync(join(tmp, dataName))) renameSync(join(tmp, dataName), join(dir, dataName));
    renameSync(join(tmp, name), target);
    for (const f of staleFiles(dir, modelPath, provider, name)) rmSync(join(dir, f), { force: true });
    return { path: target, optimised: true, note: "made" };
  } catch (e) {
    const why = String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 300);
    return { path: modelPath, optimised: false, note: `optimised graph not saved (${why}); optimising in memory` };
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
