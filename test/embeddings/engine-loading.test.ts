/**
 * Start-up of the embedding engine from SWITCHYARD_MODELS_DIR: missing files leave the model not
 * live (absent from /v1/models, 503), files copied in later make it appear without a restart,
 * broken files are reported and not fatal, and the session's own input/output names are used.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startHarness, type Harness } from "../support/harness";
import { writeEmbeddingModel } from "../support/embedding-fixture";
import { buildOnnxModel } from "../support/onnx-builder";
import { buildTinyTokenizer } from "../support/tiny-tokenizer";
import { startEmbeddingEngine } from "../../src/engines/embeddings/index";
import { EmbeddingEngine } from "../../src/engines/embeddings/engine";
import { until } from "./gated-engine";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

async function harnessWith(modelsDir: string): Promise<Harness> {
  const h = await startHarness({ SWITCHYARD_MODELS_DIR: modelsDir });
  cleanup.push(() => h.stop(), () => rmSync(modelsDir, { recursive: true, force: true }));
  return h;
}

const listed = async (h: Harness) => ((await (await fetch(h.base + "/v1/models")).json()) as any).data.map((m: any) => m.id) as string[];

describe("embedding engine loading", () => {
  test("missing files: not listed, 503 model_not_installed naming them and the pull command; copying them in makes the model live without a restart", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-models-"));
    const h = await harnessWith(modelsDir);
    const { key } = await h.account(1);
    expect(await listed(h)).not.toContain("embedding-300m");
    const r = await fetch(h.base + "/v1/embeddings", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "embedding-300m", input: "hello" }),
    });
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBeNull();
    const error = ((await r.json()) as any).error;
    expect(error.code).toBe("model_not_installed");
    expect(error.type).toBe("api_error");
    expect(error.message).toContain("embedding-300m/onnx/model.onnx");
    expect(error.message).toContain("switchyard models pull embedding-300m");
    expect(error.message).not.toContain(modelsDir);

    // A fast poller for the test; the server's own polls every few seconds.
    void startEmbeddingEngine(h.server.services, 20);
    writeEmbeddingModel(modelsDir);
    await until(() => h.server.services.engines.isLoaded("embedding-300m"));
    expect(await listed(h)).toContain("embedding-300m");
  });

  test("a corrupt model file is reported, not fatal, and leaves the model not live", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-models-"));
    const dir = writeEmbeddingModel(modelsDir);
    writeFileSync(join(dir, "onnx", "model.onnx"), "not an onnx file");
    const h = await harnessWith(modelsDir);
    expect(h.server.services.engines.isLoaded("embedding-300m")).toBe(false);
    expect(await listed(h)).not.toContain("embedding-300m");
  });

  test("reads input and output names from the session; refuses a model without sentence_embedding", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-models-"));
    cleanup.push(() => rmSync(modelsDir, { recursive: true, force: true }));
    const dir = writeEmbeddingModel(modelsDir);
    const engine = await EmbeddingEngine.load(dir, "cpu");
    const d = engine.describe();
    expect(d.output).toBe("sentence_embedding");
    expect(d.dimensions).toBe(768);
    expect(String(d.inputs)).toContain("input_ids:int64[batch_size,sequence_length]");
    await engine.close();

    // Two float outputs and none named sentence_embedding: ambiguous, refused with a clear message.
    writeFileSync(
      join(dir, "onnx", "model.onnx"),
      buildOnnxModel({
        inputs: [
          { name: "input_ids", type: "int64", dims: ["b", "s"] },
          { name: "attention_mask", type: "int64", dims: ["b", "s"] },
        ],
        outputs: [
          { name: "a", type: "float32", dims: ["b", "s"] },
          { name: "b", type: "float32", dims: ["b", "s"] },
        ],
        nodes: [
          { op: "Cast", inputs: ["input_ids"], outputs: ["a"], attrs: { to: 1 } },
          { op: "Cast", inputs: ["attention_mask"], outputs: ["b"], attrs: { to: 1 } },
        ],
      }),
    );
    await expect(EmbeddingEngine.load(dir, "cpu")).rejects.toThrow("sentence_embedding");
  });

  test("a tokenizer without BOS/EOS is refused", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-models-"));
    cleanup.push(() => rmSync(modelsDir, { recursive: true, force: true }));
    const dir = writeEmbeddingModel(modelsDir);
    const tok = buildTinyTokenizer().json as any;
    tok.added_tokens = tok.added_tokens.filter((t: any) => t.content !== "<bos>");
    delete tok.model.vocab["<bos>"];
    writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tok));
    await expect(EmbeddingEngine.load(dir, "cpu")).rejects.toThrow("BOS");
  });

  test("SWITCHYARD_ONNX_PROVIDER=cuda falls back to cpu with a reason when CUDA is unavailable", async () => {
    const modelsDir = mkdtempSync(join(tmpdir(), "switchyard-models-"));
    cleanup.push(() => rmSync(modelsDir, { recursive: true, force: true }));
    mkdirSync(modelsDir, { recursive: true });
    const engine = await EmbeddingEngine.load(writeEmbeddingModel(modelsDir), "cuda");
    const d = engine.describe();
    if (d.provider === "cpu") expect(String(d.provider_fallback)).toContain("CUDA");
    else expect(d.provider).toBe("cuda");
    await engine.close();
  });
});
