/**
 * `switchyard doctor [--onnx FILE [--run]] [--image FILE]`: an operator self-check, printed as
 * one JSON document. It loads ONNX Runtime and sharp exactly as the server does (so in the
 * compiled binary it exercises the extraction and pre-loading of their libraries), optionally
 * opens a model and decodes an image; with a valid configuration it also checks the data and
 * models directories, the upstreams and the ONNX provider (doctor-checks.ts). Exit status 0 when
 * every check passed, 1 when one failed (its `error` says why), 2 for a usage error. A broken
 * configuration is reported as a failed check, not a reason to skip the native ones.
 */
import type { InferenceSession, Tensor } from "onnxruntime-node";
import { loadOrt, type OrtModule } from "../engines/onnx-runtime";
import { loadSharp } from "../images/sharp";
import { nativeStatus } from "../runtime/native";
import { decideProvider, ProviderError } from "../runtime/provider";
import { VERSION } from "../version";
import { ConfigError, loadConfig, type Config } from "../config";
import { checkDirectory, checkUpstreams } from "./doctor-checks";

type Check = { ok: true; [k: string]: unknown } | { ok: false; error: string; [k: string]: unknown };

function failure(e: unknown): { ok: false; error: string } {
  return { ok: false, error: e instanceof Error ? e.message.split("\n")[0]! : String(e) };
}

/** A zero-filled input for a tensor input, dynamic dimensions taken as 1; null if not a plain tensor. */
function zeroInput(ort: OrtModule, meta: InferenceSession.ValueMetadata): Tensor | null {
  if (!meta.isTensor) return null;
  const dims = meta.shape.map((d) => (typeof d === "number" && d > 0 ? d : 1));
  const n = dims.reduce((a, b) => a * b, 1);
  switch (meta.type) {
    case "float32":
      return new ort.Tensor("float32", new Float32Array(n), dims);
    case "int64":
      return new ort.Tensor("int64", new BigInt64Array(n), dims);
    case "int32":
      return new ort.Tensor("int32", new Int32Array(n), dims);
    case "bool":
      return new ort.Tensor("bool", new Uint8Array(n), dims);
    default:
      return null;
  }
}

async function checkOrt(model: string | null, run: boolean): Promise<Check> {
  let ort: OrtModule;
  try {
    ort = await loadOrt();
  } catch (e) {
    return failure(e);
  }
  const report: Check = {
    ok: true,
    version: ort.env.versions.node ?? ort.env.versions.common,
    backends: ort.listSupportedBackends().map((b) => ({ name: b.name, bundled: b.bundled })),
  };
  if (!model) return report;
  try {
    const started = performance.now();
    const session = await ort.InferenceSession.create(model);
    const session_report: Record<string, unknown> = {
      file: model,
      inputs: [...session.inputNames],
      outputs: [...session.outputNames],
      load_ms: Math.round(performance.now() - started),
    };
    if (run) {
      const feeds: Record<string, Tensor> = {};
      for (const meta of session.inputMetadata) {
        const t = zeroInput(ort, meta);
        if (!t) throw new Error(`--run: input "${meta.name}" is not a float32/int64/int32/bool tensor`);
        feeds[meta.name] = t;
      }
      const out = await session.run(feeds);
      session_report.run = Object.fromEntries(Object.entries(out).map(([name, t]) => [name, { type: t.type, dims: [...t.dims] }]));
    }
    await session.release();
    return { ...report, session: session_report };
  } catch (e) {
    return { ...report, ...failure(e) };
  }
}

async function checkSharp(image: string | null): Promise<Check> {
  let sharp: ReturnType<typeof loadSharp>;
  try {
    sharp = loadSharp();
  } catch (e) {
    return failure(e);
  }
  const report: Check = { ok: true, version: sharp.versions.sharp, libvips: sharp.versions.vips };
  if (!image) return report;
  try {
    const meta = await sharp(image).metadata();
    // Decode every pixel, not just the header, so the codec itself is exercised.
    const { info } = await sharp(image).raw().toBuffer({ resolveWithObject: true });
    return { ...report, image: { file: image, format: meta.format, width: info.width, height: info.height, channels: info.channels } };
  } catch (e) {
    return { ...report, ...failure(e) };
  }
}

/**
 * The ONNX provider check: the GPU, the provider SWITCHYARD_ONNX_PROVIDER gives (ok: false when
 * `cuda` cannot be honoured, with what to do) and where each CUDA library was found.
 */
function checkProvider(config: Config): Check {
  const probe = (s: Config["onnxProvider"]) => decideProvider(s, { runtimeDir: config.runtimeDir });
  // Libraries are listed whatever the setting, so `cpu` still shows what CUDA would use.
  const auto = probe("auto");
  const libraries = auto.libraries.map((l) => ({ name: l.library.name, found: l.path, source: l.source }));
  const base = { setting: config.onnxProvider, gpu: auto.gpu, runtime_dir: config.runtimeDir, libraries };
  try {
    const d = config.onnxProvider === "auto" ? auto : probe(config.onnxProvider);
    return { ok: true, provider: d.provider, reason: d.reason, ...base };
  } catch (e) {
    if (!(e instanceof ProviderError)) throw e;
    return { ok: false, provider: null, error: e.message, ...base };
  }
}

/** Its options as the command line gave them (commands.ts: --onnx FILE, --run, --image FILE). */
export async function runDoctor(options: { onnx?: unknown; run?: unknown; image?: unknown }): Promise<number> {
  const onnx = typeof options.onnx === "string" ? options.onnx : null;
  const image = typeof options.image === "string" ? options.image : null;
  const onnxruntime = await checkOrt(onnx, options.run === true);
  const sharp = await checkSharp(image);
  let config: Config | null = null;
  let configuration: Check = { ok: true };
  try {
    config = loadConfig();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    configuration = { ok: false, error: e.message };
  }
  const checks = config
    ? {
        data_dir: checkDirectory(config.dataDir, true),
        models_dir: checkDirectory(config.modelsDir, false),
        onnx_provider: checkProvider(config),
        upstreams: await checkUpstreams(config),
      }
    : {};
  const report = {
    version: VERSION,
    platform: `${process.platform}-${process.arch}`,
    native: nativeStatus(),
    onnxruntime,
    sharp,
    configuration,
    ...checks,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + "\n");
  const all = [onnxruntime, sharp, configuration, ...Object.values(checks).flat()] as { ok: boolean }[];
  return all.every((c) => c.ok) ? 0 : 1;
}
