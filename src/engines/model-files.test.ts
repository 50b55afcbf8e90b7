import { expect, test } from "bun:test";
import { MODEL_MANIFESTS } from "./model-files";

test.each(MODEL_MANIFESTS.map((m) => [m.modelId, m] as const))(
  "%s: onnx/model.onnx is pulled last, so a running server loads only complete sets",
  (_id, manifest) => {
    expect(manifest.files.at(-1)!.path).toBe("onnx/model.onnx");
  },
);
