/**
 * What `switchyard models pull` downloads: one manifest per local model, listing the files of its
 * public ONNX export and where they go under SWITCHYARD_MODELS_DIR (contract §11). Each engine
 * keeps its own list beside it (engines/<name>/files.ts); add it to MODEL_MANIFESTS below.
 */
import { EMBEDDING_FILES } from "./embeddings/files";
import { SPEECH_FILES } from "./speech/files";

export interface ModelFile {
  /** Path inside the model's directory, '/'-separated (e.g. "onnx/model.onnx"). */
  path: string;
  url: string;
  /**
   * Lower-case hex SHA-256 of the file, or null when not pinned here: then a SHA256SUMS file
   * in the model's directory is used when present (see models/README.md), else the download
   * is reported as unverified and its checksum printed so it can be recorded.
   */
  sha256: string | null;
  /** Size in bytes when known (used for the progress bar and a cheap completeness check). */
  bytes: number | null;
  /** Not needed to load the model: a 404 on it is a warning, not a failure. */
  optional?: boolean;
}

export interface ModelManifest {
  /** Public model id (the catalog's). */
  modelId: string;
  /** Directory under SWITCHYARD_MODELS_DIR. */
  dir: string;
  /** Where the files come from, for humans (README, CLI output). */
  source: string;
  files: ModelFile[];
}

export const MODEL_MANIFESTS: ModelManifest[] = [
  EMBEDDING_FILES,
  SPEECH_FILES,
];
