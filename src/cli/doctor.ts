/**
 * `switchyard doctor [--onnx FILE [--run]] [--image FILE]`: an operator self-check of the native
 * parts, printed as one JSON document. It loads ONNX Runtime and sharp exactly as the server does
 * (so in the compiled binary it exercises the extraction and pre-loading of their libraries),
 * optionally opens a model and decodes an image. Exit status 0 when every check passed, 1 when
 * one failed (its `error` says why), 2 for a usage error. Needs no configuration.
 */
import type { InferenceSession, Tensor } from "onnxruntime-node";
import { loadOrt, type OrtModule } from "../engines/onnx-runtime";
import { loadSharp } from "../images/sharp";
import { nativeStatus } from "../runtime/native";
import { loadConfig } from "../config";
import { decideProvider, ProviderError } from "../runtime/provider";
import { VERSION } from "../version";

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

/** The GPU, the provider SWITCHYARD_ONNX_PROVIDER gives, and where each CUDA library was found. */
function providerReport(): Record<string, unknown> {
  let setting: "auto" | "cpu" | "cuda" = "auto";
  let runtimeDir = "./data/runtime";
  try {
    ({ onnxProvider: setting, runtimeDir } = loadConfig());
  } catch {
    // The doctor works with a broken configuration too: the defaults are checked instead.
  }
  const probe = (s: "auto" | "cpu" | "cuda") => decideProvider(s, { runtimeDir });
  let decision;
  let error: string | null = null;
  try {
    decision = probe(setting);
  } catch (e) {
    if (!(e instanceof ProviderError)) throw e;
    error = e.message;
    decision = probe("auto");
  }
  // Libraries are listed whatever the setting, so `cpu` still shows what CUDA would use.
  const libraries = setting === "cpu" ? probe("auto").libraries : decision.libraries;
  return {
    setting,
    provider: error === null ? decision.provider : null,
    reason: error ?? decision.reason,
    gpu: decision.gpu,
    runtime_dir: runtimeDir,
    libraries: libraries.map((l) => ({ name: l.library.name, found: l.path, source: l.source })),
  };
}

export async function runDoctor(flags: Record<string, string | boolean>): Promise<number> {
  for (const name of ["onnx", "image"] as const) {
    if (flags[name] === true) {
      process.stderr.write(`switchyard: --${name} needs a file path. Run 'switchyard --help'.\n`);
      return 2;
    }
  }
  const onnx = typeof flags.onnx === "string" ? flags.onnx : null;
  const image = typeof flags.image === "string" ? flags.image : null;
  const onnxruntime = await checkOrt(onnx, flags.run !== undefined);
  const sharp = await checkSharp(image);
  const report = {
    version: VERSION,
    platform: `${process.platform}-${process.arch}`,
    provider: providerReport(),
    native: nativeStatus(),
    onnxruntime,
    sharp,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + "\n");
  return onnxruntime.ok && sharp.ok ? 0 : 1;
}
