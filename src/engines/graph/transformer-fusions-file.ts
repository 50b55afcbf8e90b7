/**
 * The fused graph of a transformer encoder (transformer-fusions.ts), kept beside the model as
 * `<model>.fused-2.onnx` (derived-graph-file.ts; `-2`: with RMS norms fused, which the first
 * version, never released, did not). Its weights stay in the model's external data
 * file, which the fused graph names as the model does. A changed rewrite must take a new name, as
 * the float-convolution graph's did, or graphs made by the earlier one would be reused.
 */
import { derivedGraph, type GraphSource } from "./derived-graph-file";
import { fuseTransformer } from "./transformer-fusions";
import { graphStem } from "../optimised-graph";

export function fusedGraphName(modelFile: string): string {
  return `${graphStem(modelFile)}.fused-2.onnx`;
}

const encode = (s: string) => new TextEncoder().encode(s);

/** The graph to load for `modelPath`: its fused graph when any of the fusions applies. */
export function fusedGraph(modelPath: string): GraphSource {
  return derivedGraph(modelPath, {
    name: fusedGraphName(modelPath),
    markers: [encode("Tanh"), encode("Transpose"), encode("ReduceMean")],
    make(bytes) {
      const f = fuseTransformer(bytes);
      if (!f.model) return { model: null };
      const what = [f.gelu && `${f.gelu} tanh GELUs as FastGelu`, f.keyTranspose && `${f.keyTranspose} transposed keys read in place`, f.singleHead && `${f.singleHead} single-head transposes as reshapes`, f.rotary && `${f.rotary} rotary embeddings as one operator`, f.rmsNorm && `${f.rmsNorm} RMS norms as one operator`].filter(Boolean).join(", ");
      return { model: f.model, what };
    },
    failed: (why) => `fusions not made (${why}); plain graph`,
    earlier: () => [`${graphStem(modelPath)}.fused.onnx`],
  });
}
