import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
export const SERVICE_NAME = "switchyard";

/** Replaced by build.ts (`define`) with the commit the executable was built from. */
declare const SWITCHYARD_BUILD_COMMIT: string | undefined;

/** The commit this build came from: set by build.ts; "unknown" when run from source. */
export const COMMIT: string = typeof SWITCHYARD_BUILD_COMMIT === "string" && SWITCHYARD_BUILD_COMMIT ? SWITCHYARD_BUILD_COMMIT : "unknown";

/** The ONNX Runtime the local engines use (onnxruntime-node, pinned exactly in package.json). */
export const ONNXRUNTIME_VERSION: string = (pkg.dependencies as Record<string, string>)["onnxruntime-node"] ?? "unknown";
