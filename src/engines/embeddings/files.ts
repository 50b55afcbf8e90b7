/**
 * The files of embedding-300m: the full-precision (fp32) ONNX export of Google's
 * EmbeddingGemma-300m published by the onnx-community organisation on Hugging Face. Its graph
 * takes input_ids/attention_mask (int64) and returns sentence_embedding [batch, 768], pooling,
 * dense projections and normalisation included. The fp16 variant is not used: the model card
 * warns that EmbeddingGemma's activations do not support float16.
 *
 * Checksums are not pinned here: they could not be fetched when this list was written (no
 * network to Hugging Face), and an invented value would be worse than none. Operators pin them
 * with a SHA256SUMS file (models/README.md); `switchyard models pull` prints what it downloaded.
 */
import type { ModelManifest } from "../model-files";

export const EMBEDDING_REPO = "onnx-community/embeddinggemma-300m-ONNX";
/** A branch or commit of the repository; pin a commit hash for reproducible pulls. */
export const EMBEDDING_REVISION = "main";

const url = (path: string) => `https://huggingface.co/${EMBEDDING_REPO}/resolve/${EMBEDDING_REVISION}/${path}`;

export const EMBEDDING_FILES: ModelManifest = {
  modelId: "embedding-300m",
  dir: "embedding-300m",
  source: `https://huggingface.co/${EMBEDDING_REPO} (revision ${EMBEDDING_REVISION})`,
  // onnx/model.onnx comes last: a running server starts loading once it appears, so by then
  // its external weights and the tokenizer must already be in place.
  files: [
    { path: "onnx/model.onnx_data", url: url("onnx/model.onnx_data"), sha256: null, bytes: null },
    { path: "tokenizer.json", url: url("tokenizer.json"), sha256: null, bytes: null },
    { path: "tokenizer_config.json", url: url("tokenizer_config.json"), sha256: null, bytes: null, optional: true },
    { path: "config.json", url: url("config.json"), sha256: null, bytes: null, optional: true },
    { path: "onnx/model.onnx", url: url("onnx/model.onnx"), sha256: null, bytes: null },
  ],
};
