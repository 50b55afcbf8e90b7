/**
 * The float-convolution graph of a model (float-convs.ts), made once and kept beside it as
 * `<model>.float-convs-2d.onnx` (named for its 2-D convolutions: the `<model>.float-convs.onnx` an
 * earlier version made, with 1-D ones, is not read, and is removed with its optimised graphs once
 * the new graph is saved), as the optimised graph is (../optimised-graph.ts): a later load
 * reuses it while it is newer than the model. Written through a private temporary folder and a
 * rename, so no half-written graph is ever under that name. A folder that cannot be written gets
 * the graph in memory instead (made again at each load, ~1 s for Kokoro's int8 graph); a model
 * without a quantised convolution is left as it is, found by a byte search before any parsing.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { floatConvs } from "./float-convs";
import { graphStem } from "../optimised-graph";

/** What to load: a file, or bytes when the graph could not be saved; `note` says which and why. */
export type GraphSource = { path: string; bytes?: undefined; note?: string } | { path?: undefined; bytes: Uint8Array; note: string };

export function floatConvsName(modelFile: string): string {
  return `${graphStem(modelFile)}.float-convs-2d.onnx`;
}

const marker = new TextEncoder().encode("ConvInteger");

/** An earlier version's 1-D graph of the same model and its optimised graphs (`.opt.*`, weights included). */
function earlierGraphs(dir: string, modelFile: string): string[] {
  const earlier = `${graphStem(modelFile)}.float-convs.`;
  try {
    return readdirSync(dir).filter((f) => f === `${earlier}onnx` || f.startsWith(`${earlier}opt.`));
  } catch {
    return [];
  }
}

/** The graph to load for `modelPath`: its float-convolution graph when it has quantised convolutions. */
export function floatConvsGraph(modelPath: string): GraphSource {
  const target = join(dirname(modelPath), floatConvsName(modelPath));
  try {
    if (existsSync(target) && statSync(target).mtimeMs >= statSync(modelPath).mtimeMs) return { path: target, note: "reused" };
  } catch {
    // Unreadable: made again below.
  }
  const bytes = readFileSync(modelPath);
  if (bytes.indexOf(marker) < 0) return { path: modelPath };
  let made: ReturnType<typeof floatConvs>;
  try {
    made = floatConvs(bytes);
  } catch (e) {
    return { path: modelPath, note: `float convolutions not made (${String((e as Error)?.message ?? e).slice(0, 200)}); quantised graph` };
  }
  if (!made.model) return { path: modelPath, note: `no quantised convolution matched (${made.left} left as they are)` };
  const what = `${made.replaced} float convolutions${made.left ? `, ${made.left} left quantised` : ""}`;
  let tmp: string | null = null;
  try {
    tmp = mkdtempSync(join(dirname(modelPath), ".float-convs-"));
    writeFileSync(join(tmp, "graph.onnx"), made.model);
    renameSync(join(tmp, "graph.onnx"), target);
    for (const f of earlierGraphs(dirname(modelPath), modelPath)) rmSync(join(dirname(modelPath), f), { force: true });
    return { path: target, note: `made (${what})` };
  } catch (e) {
    return { bytes: made.model, note: `${what}, in memory (not saved: ${String((e as Error)?.message ?? e).split("\n")[0]!.slice(0, 200)})` };
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
