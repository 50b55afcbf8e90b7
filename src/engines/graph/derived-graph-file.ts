/**
 * A graph derived from a model by a rewrite (float-convs.ts, transformer-fusions.ts), made once
 * and kept beside the model under a name of its own, as the optimised graph is
 * (../optimised-graph.ts): a later load reuses it while it is newer than the model. Written
 * through a private temporary folder and a rename, so no half-written graph is ever under that
 * name. A folder that cannot be written gets the graph in memory instead (made again at each
 * load); a model the rewrite has nothing to do in is loaded as it is, found by a byte search
 * before any parsing where possible. Weights kept in an external data file stay where they are:
 * the derived graph beside the model names the same file.
 */
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * What to load: a file, or bytes when the graph could not be saved (`dir`: the model's folder,
 * where its external data is); `note` says which and why.
 */
export type GraphSource = { path: string; bytes?: undefined; note?: string } | { path?: undefined; bytes: Uint8Array; dir: string; note: string };

export interface Derivation {
  /** The derived graph's file name beside the model. */
  name: string;
  /** Byte strings (op types) of which the model must hold one for the rewrite to apply. */
  markers: readonly Uint8Array[];
  /** The rewritten model and what changed, or null and why nothing did (no note: nothing to say). */
  make(model: Uint8Array): { model: Uint8Array; what: string } | { model: null; note?: string };
  /** The note when the rewrite threw. */
  failed(reason: string): string;
  /** Files of an earlier version's derived graph beside the model, removed once this one is saved. */
  earlier?(dir: string): string[];
}

const reason = (e: unknown) => String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 200);

/** The graph to load for `modelPath`: its derived graph when the rewrite changes anything. */
export function derivedGraph(modelPath: string, d: Derivation): GraphSource {
  const dir = dirname(modelPath);
  const target = join(dir, d.name);
  try {
    if (existsSync(target) && statSync(target).mtimeMs >= statSync(modelPath).mtimeMs) return { path: target, note: "reused" };
  } catch {
    // Unreadable: made again below.
  }
  const bytes = readFileSync(modelPath);
  if (!d.markers.some((m) => bytes.indexOf(m) >= 0)) return { path: modelPath };
  let made: ReturnType<Derivation["make"]>;
  try {
    made = d.make(bytes);
  } catch (e) {
    return { path: modelPath, note: d.failed(reason(e)) };
  }
  if (!made.model) return made.note ? { path: modelPath, note: made.note } : { path: modelPath };
  let tmp: string | null = null;
  try {
    tmp = mkdtempSync(join(dir, ".derived-graph-"));
    writeFileSync(join(tmp, "graph.onnx"), made.model);
    renameSync(join(tmp, "graph.onnx"), target);
    for (const f of d.earlier?.(dir) ?? []) rmSync(join(dir, f), { force: true });
    return { path: target, note: `made (${made.what})` };
  } catch (e) {
    return { bytes: made.model, dir, note: `${made.what}, in memory (not saved: ${reason(e)})` };
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
