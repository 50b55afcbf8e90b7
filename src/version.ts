import pkg from "../package.json" with { type: "json" };
import { buildInfo } from "./runtime/build-info";

export const VERSION: string = pkg.version;
export const SERVICE_NAME = "switchyard";

/** The commit this build came from (build.ts writes runtime/build-info.ts); "unknown" from source. */
export const COMMIT: string = buildInfo.commit ?? "unknown";

/** The ONNX Runtime the local engines use (onnxruntime-node, pinned exactly in package.json). */
export const ONNXRUNTIME_VERSION: string = (pkg.dependencies as Record<string, string>)["onnxruntime-node"] ?? "unknown";
