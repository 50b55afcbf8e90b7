/**
 * What `switchyard models pull` downloads: one manifest per local model, listing the files of its
 * public ONNX export and where they go under SWITCHYARD_MODELS_DIR (models/README.md). Each engine
 * keeps its own list beside it (engines/<name>/files.ts); add it to MODEL_MANIFESTS below.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
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
  /**
   * Only pulled for these execution providers (a model export meant for one kind of hardware,
   * e.g. an int8 graph for CPUs); absent: for all.
   */
  providers?: readonly ("cpu" | "cuda")[];
}

export interface ModelManifest {
  /** Public model id (the catalog's). */
  modelId: string;
  /** Directory under SWITCHYARD_MODELS_DIR. */
  dir: string;
  /** Where the files come from, for humans (README, CLI output). */
  source: string;
  files: ModelFile[];
  /**
   * A folder of interchangeable files of which at least one is needed (voice packs): whatever
   * lies there is used, the files listed above in it are only what `pull` offers, each optional.
   */
  atLeastOne?: { dir: string; ext: string; what: string };
}

/** The manifest as pulled for `provider`: without the files meant for other providers. */
export function manifestFor(m: ModelManifest, provider: "cpu" | "cuda"): ModelManifest {
  return { ...m, files: m.files.filter((f) => !f.providers || f.providers.includes(provider)) };
}

/** The files of `m.atLeastOne` present in `modelDir` (names without the extension), sorted. */
export function presentInFolder(m: ModelManifest, modelDir: string): string[] {
  if (!m.atLeastOne) return [];
  const { dir, ext } = m.atLeastOne;
  try {
    return readdirSync(join(modelDir, dir)).filter((f) => f.endsWith(ext)).map((f) => f.slice(0, -ext.length)).sort();
  } catch {
    return [];
  }
}

export const MODEL_MANIFESTS: ModelManifest[] = [
  EMBEDDING_FILES,
  SPEECH_FILES,
];
