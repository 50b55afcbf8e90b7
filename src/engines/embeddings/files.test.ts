import { describe, expect, test } from "bun:test";
import { EMBEDDING_FILES } from "./files";
import { REQUIRED_FILES } from "./engine";
import { MODEL_MANIFESTS } from "../model-files";

describe("embedding-300m file list", () => {
  test("is pulled by `models pull` and covers what the engine needs to load", () => {
    expect(MODEL_MANIFESTS).toContain(EMBEDDING_FILES);
    for (const f of REQUIRED_FILES) expect(EMBEDDING_FILES.files.find((x) => x.path === f)?.optional).toBeFalsy();
    expect(EMBEDDING_FILES.files.map((f) => f.path)).toContain("onnx/model.onnx_data");
  });

  test("fetches onnx/model.onnx last, so a polling server loads only complete sets", () => {
    expect(EMBEDDING_FILES.files.at(-1)!.path).toBe("onnx/model.onnx");
  });

  test("every URL points at the public ONNX export, and no checksum is made up", () => {
    for (const f of EMBEDDING_FILES.files) {
      expect(f.url).toBe(`https://huggingface.co/onnx-community/embeddinggemma-300m-ONNX/resolve/main/${f.path}`);
      expect(f.sha256 === null || /^[0-9a-f]{64}$/.test(f.sha256)).toBe(true);
    }
  });
});
