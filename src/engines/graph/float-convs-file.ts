/**
 * The float-convolution graph of a model (float-convs.ts), kept beside it as
 * `<model>.float-convs-2d.onnx` (derived-graph-file.ts; named for its 2-D convolutions: the
 * `<model>.float-convs.onnx` an earlier version made, with 1-D ones, is not read, and is removed
 * with its optimised graphs once the new graph is saved). Made again at each load when the folder
 * cannot be written (~1 s for Kokoro's int8 graph); a model without a quantised convolution is
 * left as it is.
 */
import { readdirSync } from "node:fs";
import { floatConvs } from "./float-convs";
import { derivedGraph, type GraphSource } from "./derived-graph-file";
import { graphStem } from "../optimised-graph";

export type { GraphSource } from "./derived-graph-file";

export function floatConvsName(modelFile: string): string {
  return `${graphStem(modelFile)}.float-convs-2d.onnx`;
}

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
  return derivedGraph(modelPath, {
    name: floatConvsName(modelPath),
    markers: [new TextEncoder().encode("ConvInteger")],
    make(bytes) {
      const made = floatConvs(bytes);
      if (!made.model) return { model: null, note: `no quantised convolution matched (${made.left} left as they are)` };
      return { model: made.model, what: `${made.replaced} float convolutions${made.left ? `, ${made.left} left quantised` : ""}` };
    },
    failed: (why) => `float convolutions not made (${why}); quantised graph`,
    earlier: (dir) => earlierGraphs(dir, modelPath),
  });
}
