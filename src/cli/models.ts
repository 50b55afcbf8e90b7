/**
 * `switchyard models pull [model-id ...]`: downloads the local models' files into
 * SWITCHYARD_MODELS_DIR (all models when none is named). `switchyard models list` shows what is
 * expected and what is present. HF_ENDPOINT (a mirror) and HF_TOKEN (gated repositories) are
 * honoured as in Hugging Face's own tools; the token is never printed.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config";
import { MODEL_MANIFESTS, manifestFor, presentInFolder, type ModelManifest } from "../engines/model-files";
import { decideProvider } from "../runtime/provider";
import { ChecksumError, DownloadError, OfflineError, pullModel } from "../engines/model-download";
import { StderrProgress } from "./progress";

const HF = "https://huggingface.co";

function pick(ids: string[]): ModelManifest[] | string {
  if (ids.length === 0) return MODEL_MANIFESTS;
  const unknown = ids.filter((id) => !MODEL_MANIFESTS.some((m) => m.modelId === id));
  if (unknown.length) return `unknown model '${unknown.join("', '")}'; models with files: ${MODEL_MANIFESTS.map((m) => m.modelId).join(", ")}`;
  return MODEL_MANIFESTS.filter((m) => ids.includes(m.modelId));
}

/**
 * The provider the files are pulled for (a model may have a graph per provider, e.g. int8 for
 * CPUs): `--provider`, else SWITCHYARD_ONNX_PROVIDER, and for `auto` CUDA as soon as an NVIDIA
 * GPU is there (its libraries may well be installed after the models).
 */
export function pullProvider(config: Pick<Config, "onnxProvider" | "runtimeDir">, flag: string | undefined, env: Record<string, string | undefined>): "cpu" | "cuda" | string {
  if (flag !== undefined) return flag === "cpu" || flag === "cuda" ? flag : `--provider must be cpu or cuda, got '${flag}'`;
  if (config.onnxProvider !== "auto") return config.onnxProvider;
  const d = decideProvider("auto", { runtimeDir: config.runtimeDir, env });
  return d.provider === "cuda" || (d.gpu?.gpus.length ?? 0) > 0 ? "cuda" : "cpu";
}

const inFolder = (m: ModelManifest, path: string) => m.atLeastOne !== undefined && path.startsWith(`${m.atLeastOne.dir}/`);

function list(config: Config): number {
  for (const m of MODEL_MANIFESTS) {
    const modelDir = join(config.modelsDir, m.dir);
    process.stdout.write(`${m.modelId}  (${modelDir})\n  source: ${m.source}\n`);
    for (const f of m.files) {
      if (inFolder(m, f.path)) continue;
      const present = existsSync(join(modelDir, ...f.path.split("/")));
      const note = f.optional ? " (optional)" : f.providers ? ` (for ${f.providers.join(", ")})` : "";
      process.stdout.write(`  ${present ? "present" : "missing"}  ${f.path}${note}\n`);
    }
    if (m.atLeastOne) {
      // What is served is what the folder holds, not the list pull offers.
      const { dir, ext, what } = m.atLeastOne;
      const found = presentInFolder(m, modelDir);
      const offered = m.files.filter((f) => inFolder(m, f.path)).length;
      process.stdout.write(
        found.length > 0
          ? `  present  ${dir}/*${ext}: ${found.length} ${what}(s): ${found.join(", ")}\n`
          : `  missing  ${dir}/*${ext}: at least one ${what} is needed (pull offers ${offered})\n`,
      );
    }
  }
  return 0;
}

export async function runModelsCommand(
  config: Config,
  sub: string | undefined,
  ids: string[],
  options: { provider?: unknown } = {},
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  const err = (line: string) => process.stderr.write(`switchyard: ${line}\n`);
  if (sub === "list") return list(config);
  if (sub !== "pull") {
    err(`usage: switchyard models pull [--provider cpu|cuda] [${MODEL_MANIFESTS.map((m) => m.modelId).join(" | ")} ...] | switchyard models list`);
    return 2;
  }
  const provider = pullProvider(config, typeof options.provider === "string" ? options.provider : undefined, env);
  if (provider !== "cpu" && provider !== "cuda") {
    err(provider);
    return 2;
  }
  const picked = pick(ids);
  if (typeof picked === "string") {
    err(picked);
    return 2;
  }
  const chosen = picked.map((m) => manifestFor(m, provider));
  const endpoint = env.HF_ENDPOINT?.trim().replace(/\/+$/, "");
  const token = env.HF_TOKEN?.trim();
  const progress = new StderrProgress();
  for (const m of chosen) {
    process.stderr.write(`${m.modelId}: pulling into ${join(config.modelsDir, m.dir)} from ${m.source} (files for ${provider})\n`);
    try {
      const files = await pullModel(m, {
        modelsDir: config.modelsDir,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        rewriteUrl: endpoint ? (u) => (u.startsWith(HF) ? endpoint + u.slice(HF.length) : u) : undefined,
        progress,
        log: (line) => process.stderr.write(`  ${line}\n`),
      });
      if (m.atLeastOne && presentInFolder(m, join(config.modelsDir, m.dir)).length === 0) {
        err(`${m.modelId}: no ${m.atLeastOne.what} could be downloaded into ${m.atLeastOne.dir}/; the model needs at least one`);
        return 1;
      }
      const unverified = files.filter((f) => f.verified === "unverified").length;
      process.stderr.write(`${m.modelId}: ready${unverified ? ` (${unverified} file(s) without a pinned checksum; recorded in SHA256SUMS for later pulls)` : ""}\n`);
    } catch (e) {
      if (e instanceof OfflineError || e instanceof DownloadError || e instanceof ChecksumError) {
        err(`${m.modelId}: ${e.message}`);
        return 1;
      }
      throw e;
    }
  }
  process.stderr.write("A running server picks the files up within seconds; no restart needed.\n");
  return 0;
}
