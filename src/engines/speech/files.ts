/**
 * The files of voice-82m: the Kokoro-82M v1.0 ONNX export published by the onnx-community
 * organisation on Hugging Face (from hexgrad/Kokoro-82M, Apache-2.0), in that repository's own
 * layout: onnx/model.onnx (fp32, input_ids/style/speed → waveform at 24 kHz), the phoneme
 * vocabulary in config.json / tokenizer.json, and one voice pack per voice
 * (voices/<id>.bin, raw float32 510×256). Documented in models/voice-82m.md.
 *
 * Which graph: the export comes in several precisions. On a CPU the int8 graph
 * (onnx/model_quantized.onnx, 92 MB) is the fast one; on CUDA int8 kernels are missing and its
 * operators fall back to the CPU, so there the fp32 graph (onnx/model.onnx, 326 MB) is used, or
 * the fp16 one when only it is there. `pull` fetches the graph for the provider in use, and the
 * engine loads the first present of MODEL_FILES[provider] (README "Running on a GPU").
 *
 * Checksums are not pinned: they could not be fetched where this list was written (no access to
 * Hugging Face), and an invented value would be worse than none; see models/README.md for
 * pinning them with SHA256SUMS.
 */
import type { ModelManifest } from "../model-files";

export const SPEECH_REPO = "onnx-community/Kokoro-82M-v1.0-ONNX";
/** A branch or commit of the repository; pin a commit hash for reproducible pulls. */
export const SPEECH_REVISION = "main";

/**
 * The English voices (American a*, British b*) that `pull` offers, since the front end speaks
 * English. None is required: the server serves whatever voices/*.bin holds (at least one).
 */
export const SPEECH_VOICES = [
  "af_alloy", "af_aoede", "af_bella", "af_heart", "af_jessica", "af_kore", "af_nicole", "af_nova", "af_river", "af_sarah", "af_sky",
  "am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx", "am_puck", "am_santa",
  "bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george", "bm_lewis",
] as const;

/** The graphs the engine looks for, best first, by the provider it runs on. */
export const MODEL_FILES: Readonly<Record<"cpu" | "cuda", readonly string[]>> = {
  cpu: ["onnx/model_quantized.onnx", "onnx/model.onnx", "onnx/model_fp16.onnx"],
  cuda: ["onnx/model.onnx", "onnx/model_fp16.onnx", "onnx/model_quantized.onnx"],
};

/** One voice pack: 510 rows × 256 float32. */
export const VOICE_PACK_BYTES = 510 * 256 * 4;

const url = (path: string) => `https://huggingface.co/${SPEECH_REPO}/resolve/${SPEECH_REVISION}/${path}`;

export const SPEECH_FILES: ModelManifest = {
  modelId: "voice-82m",
  dir: "voice-82m",
  source: `https://huggingface.co/${SPEECH_REPO} (revision ${SPEECH_REVISION})`,
  // The graph comes last: a running server loads the model (with the voices present at that
  // moment) as soon as it appears, so everything else must already be in place. One graph per
  // provider (see MODEL_FILES).
  files: [
    { path: "config.json", url: url("config.json"), sha256: null, bytes: null, optional: true },
    { path: "tokenizer.json", url: url("tokenizer.json"), sha256: null, bytes: null, optional: true },
    { path: "tokenizer_config.json", url: url("tokenizer_config.json"), sha256: null, bytes: null, optional: true },
    ...SPEECH_VOICES.map((v) => ({ path: `voices/${v}.bin`, url: url(`voices/${v}.bin`), sha256: null, bytes: VOICE_PACK_BYTES, optional: true })),
    { path: "onnx/model.onnx", url: url("onnx/model.onnx"), sha256: null, bytes: null, providers: ["cuda"] },
    { path: "onnx/model_quantized.onnx", url: url("onnx/model_quantized.onnx"), sha256: null, bytes: null, providers: ["cpu"] },
  ],
  atLeastOne: { dir: "voices", ext: ".bin", what: "voice pack" },
};
