/**
 * The one way to get ONNX Runtime. In development this is a plain import of onnxruntime-node;
 * in the compiled binary the native addon and libonnxruntime.so.1 are extracted and pre-loaded
 * first (see src/runtime/native.ts), because the addon cannot find the library inside the binary.
 */
import type * as Ort from "onnxruntime-node";

let ort: Promise<typeof Ort> | null = null;

export function loadOrt(): Promise<typeof Ort> {
  ort ??= import("onnxruntime-node");
  return ort;
}
export type OrtModule = typeof Ort;
