/**
 * A tiny ONNX model with Kokoro-82M's signature (input_ids int64 [1, n], style float32 [1, 256],
 * speed float32 [1] → waveform float32 [samples] at 24 kHz), plus voice packs and config.json,
 * written into a models directory laid out like the real export. Its output is easy to check:
 *
 *   waveform = style (256 samples, the blended style row itself) ++ a 0.3-amplitude sine of
 *              floor(n · SAMPLES_PER_TOKEN / speed) samples, n counting the two pad tokens,
 *
 * so tests can read back which style row was used and how speed scaled the duration. `work`
 * adds MatMul layers over an [n·16, 256] tensor (result multiplied into the output by zero) so
 * a chunk takes real time, as on the real model, for streaming and scheduling tests.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildOnnxModel, onnxType, seededFloats, type InitializerSpec, type NodeSpec } from "./onnx-builder";
import { KOKORO_VOCAB } from "../../src/text/kokoro-vocab";

export const SAMPLES_PER_TOKEN = 240;
export const STYLE_DIM = 256;
export const ROWS = 510;
export const TEST_VOICES = ["af_heart", "af_bella", "af_sky", "am_adam", "bf_emma", "bm_george", "jf_alpha"];

/** Voice j, row r, column c: distinct per voice and per row, inside [-1, 1]. */
export function voiceValue(j: number, r: number, c: number): number {
  return ((j + 1) / 20 + r / 2000) * (c % 2 === 0 ? 1 : -1);
}

/**
 * `onlyTokens`: the model fails (a Reshape of input_ids to [1, onlyTokens]) for any other
 * sequence length, pads included, so a test can make one chunk succeed and the next one fail.
 */
export function buildTinyKokoroModel(work = 0, onlyTokens?: number, quantisedConv = false): Uint8Array {
  const inits: InitializerSpec[] = [
    { name: "one_i", type: "int64", dims: [], data: [1] },
    { name: "spt", type: "float32", dims: [], data: [SAMPLES_PER_TOKEN] },
    { name: "zero_f", type: "float32", dims: [], data: [0] },
    { name: "one_f", type: "float32", dims: [], data: [1] },
    { name: "omega", type: "float32", dims: [], data: [(2 * Math.PI * 220) / 24000] },
    { name: "amp", type: "float32", dims: [], data: [0.3] },
    { name: "flat", type: "int64", dims: [1], data: [STYLE_DIM] },
    { name: "axes0", type: "int64", dims: [1], data: [0] },
  ];
  const nodes: NodeSpec[] = [
    { op: "Shape", inputs: ["input_ids"], outputs: ["shape"] },
    { op: "Gather", inputs: ["shape", "one_i"], outputs: ["n"], attrs: { axis: 0 } },
    { op: "Cast", inputs: ["n"], outputs: ["nf"], attrs: { to: onnxType("float32") } },
    { op: "Mul", inputs: ["nf", "spt"], outputs: ["raw"] },
    { op: "Div", inputs: ["raw", "speed"], outputs: ["len1"] },
    { op: "Floor", inputs: ["len1"], outputs: ["lenf1"] },
    { op: "Squeeze", inputs: ["lenf1", "axes0"], outputs: ["lenf"] },
    { op: "Range", inputs: ["zero_f", "lenf", "one_f"], outputs: ["t"] },
    { op: "Mul", inputs: ["t", "omega"], outputs: ["phase"] },
    { op: "Sin", inputs: ["phase"], outputs: ["sine"] },
    { op: "Mul", inputs: ["sine", "amp"], outputs: ["tone"] },
    { op: "Reshape", inputs: ["style", "flat"], outputs: ["head"] },
  ];
  let body = "tone";
  if (work > 0) {
    inits.push({ name: "rep", type: "int64", dims: [1], data: [16] }, { name: "width", type: "int64", dims: [1], data: [STYLE_DIM] });
    nodes.push(
      { op: "Unsqueeze", inputs: ["n", "axes0"], outputs: ["n1"] },
      { op: "Mul", inputs: ["n1", "rep"], outputs: ["rows"] },
      { op: "Concat", inputs: ["rows", "width"], outputs: ["xshape"], attrs: { axis: 0 } },
      { op: "Expand", inputs: ["style", "xshape"], outputs: ["x0"] },
    );
    let x = "x0";
    for (let l = 0; l < work; l++) {
      inits.push({ name: `w${l}`, type: "float32", dims: [STYLE_DIM, STYLE_DIM], data: seededFloats(STYLE_DIM * STYLE_DIM, 11 + l, 1 / 16) });
      nodes.push({ op: "MatMul", inputs: [x, `w${l}`], outputs: [`m${l}`] }, { op: "Tanh", inputs: [`m${l}`], outputs: [`x${l + 1}`] });
      x = `x${l + 1}`;
    }
    nodes.push(
      { op: "ReduceMean", inputs: [x], outputs: ["busy"], attrs: { keepdims: 0 } },
      { op: "Mul", inputs: ["busy", "zero_f"], outputs: ["nothing"] },
      { op: "Add", inputs: ["tone", "nothing"], outputs: ["tone_w"] },
    );
    body = "tone_w";
  }
  if (onlyTokens !== undefined) {
    inits.push({ name: "only_shape", type: "int64", dims: [2], data: [1, onlyTokens] });
    nodes.push(
      { op: "Reshape", inputs: ["input_ids", "only_shape"], outputs: ["checked"] },
      { op: "ReduceSum", inputs: ["checked"], outputs: ["checked_sum"], attrs: { keepdims: 0 } },
      { op: "Cast", inputs: ["checked_sum"], outputs: ["checked_f"], attrs: { to: onnxType("float32") } },
      { op: "Mul", inputs: ["checked_f", "zero_f"], outputs: ["checked_zero"] },
      { op: "Add", inputs: [body, "checked_zero"], outputs: ["tone_checked"] },
    );
    body = "tone_checked";
  }
  if (quantisedConv) {
    // A convolution as ONNX Runtime's dynamic quantisation writes it (int8 exports are made of
    // these), its result multiplied into the output by zero.
    inits.push(
      { name: "axes2", type: "int64", dims: [1], data: [2] },
      { name: "conv_w", type: "uint8", dims: [2, STYLE_DIM, 1], data: Uint8Array.from({ length: 2 * STYLE_DIM }, (_, i) => (i * 37) % 256) },
      { name: "conv_w_scale", type: "float32", dims: [], data: [0.01] },
    );
    nodes.push(
      { op: "Unsqueeze", inputs: ["style", "axes2"], outputs: ["style3"] },
      { op: "DynamicQuantizeLinear", inputs: ["style3"], outputs: ["style_q", "style_s", "style_zp"] },
      { op: "ConvInteger", inputs: ["style_q", "conv_w", "style_zp"], outputs: ["conv_int"], attrs: { kernel_shape: [1] } },
      { op: "Mul", inputs: ["style_s", "conv_w_scale"], outputs: ["conv_scale"] },
      { op: "Cast", inputs: ["conv_int"], outputs: ["conv_f"], attrs: { to: onnxType("float32") } },
      { op: "Mul", inputs: ["conv_f", "conv_scale"], outputs: ["conv_out"] },
      { op: "ReduceSum", inputs: ["conv_out"], outputs: ["conv_sum"], attrs: { keepdims: 0 } },
      { op: "Mul", inputs: ["conv_sum", "zero_f"], outputs: ["conv_zero"] },
      { op: "Add", inputs: [body, "conv_zero"], outputs: ["tone_conv"] },
    );
    body = "tone_conv";
  }
  nodes.push({ op: "Concat", inputs: ["head", body], outputs: ["waveform"], attrs: { axis: 0 } });
  return buildOnnxModel({
    name: "tiny-kokoro",
    inputs: [
      { name: "input_ids", type: "int64", dims: [1, "sequence_length"] },
      { name: "style", type: "float32", dims: [1, STYLE_DIM] },
      { name: "speed", type: "float32", dims: [1] },
    ],
    outputs: [{ name: "waveform", type: "float32", dims: ["num_samples"] }],
    nodes,
    initializers: inits,
  });
}

/** Writes <modelsDir>/voice-82m/{onnx/model.onnx, config.json, voices/*.bin}; returns the voice-82m dir. */
/** `quantisedConv`: the graph holds a dynamically quantised convolution, as int8 exports do. */
export function writeTinyKokoro(modelsDir: string, opts: { work?: number; voices?: string[]; onlyTokens?: number; quantisedConv?: boolean } = {}): string {
  const dir = join(modelsDir, "voice-82m");
  mkdirSync(join(dir, "onnx"), { recursive: true });
  mkdirSync(join(dir, "voices"), { recursive: true });
  writeFileSync(join(dir, "onnx", "model.onnx"), buildTinyKokoroModel(opts.work ?? 0, opts.onlyTokens, opts.quantisedConv === true));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ n_token: 178, vocab: Object.fromEntries(KOKORO_VOCAB) }));
  (opts.voices ?? TEST_VOICES).forEach((id, j) => {
    const pack = new Float32Array(ROWS * STYLE_DIM);
    for (let r = 0; r < ROWS; r++) for (let c = 0; c < STYLE_DIM; c++) pack[r * STYLE_DIM + c] = voiceValue(j, r, c);
    writeFileSync(join(dir, "voices", `${id}.bin`), new Uint8Array(pack.buffer));
  });
  return dir;
}
