/**
 * The one way to get ONNX Runtime. In development this is a plain import of onnxruntime-node;
 * in the compiled binary libonnxruntime.so.1 is first extracted and pre-loaded (see
 * src/runtime/native.ts), because the embedded addon cannot find the library by itself.
 */
import type * as Ort from "onnxruntime-node";
import { prepareNative } from "../runtime/native";

let ort: Promise<typeof Ort> | null = null;

export function loadOrt(): Promise<typeof Ort> {
  ort ??= (async () => {
    prepareNative("onnxruntime");
    const mod = await import("onnxruntime-node");
    // ONNX Runtime's own logger writes raw lines to stderr (a failed CUDA provider load prints two
    // red ones), which would break the JSON log: its failures reach us as exceptions, logged by us.
    mod.env.logLevel = "fatal";
    return mod;
  })().catch((e: unknown) => {
    // Let a later call try again (e.g. after the operator fixed a read-only cache dir).
    ort = null;
    throw e;
  });
  return ort;
}
export type OrtModule = typeof Ort;
