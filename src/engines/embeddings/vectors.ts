/**
 * Output vectors: `dimensions` truncation with renormalisation (EmbeddingGemma is trained with
 * Matryoshka representation learning, so a prefix of the vector is itself a usable embedding once
 * rescaled to unit length), and the two wire encodings.
 */
import { writeFloat32s } from "./float32-text";

/** The first `dims` components, rescaled to unit L2 norm (all-zero stays zero). */
export function truncateAndNormalise(v: Float32Array, dims: number): Float32Array {
  if (dims >= v.length) return v;
  const out = v.slice(0, dims);
  let sum = 0;
  for (let i = 0; i < out.length; i++) sum += out[i]! * out[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = out[i]! / norm;
  return out;
}

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Little-endian float32 bytes, base64 (what OpenAI's SDKs decode with Float32Array). */
export function toBase64(v: Float32Array): string {
  if (!littleEndian) {
    const copy = new DataView(new ArrayBuffer(v.length * 4));
    v.forEach((x, i) => copy.setFloat32(i * 4, x, true));
    return Buffer.from(copy.buffer).toString("base64");
  }
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
}

/** Plain numbers, each the exact float32 value (benchmarks compare the old JSON.stringify path with writeFloat32s). */
export function toFloats(v: Float32Array): number[] {
  return Array.from(v);
}

/** How one vector goes on the wire: its width after truncation and its encoding. */
export interface RowEncoding {
  dims: number;
  format: "float" | "base64";
}

/**
 * The JSON text of one `embedding` value, ready to be spliced into the response body: the base64
 * string (quoted) or the array of floats (float32-text.ts). Written in the event loop for small
 * requests and by the tokenizer threads for large ones (engine.ts embedEncoded).
 */
export function encodeEmbedding(v: Float32Array, e: RowEncoding): string {
  const cut = truncateAndNormalise(v, e.dims);
  return e.format === "base64" ? `"${toBase64(cut)}"` : writeFloat32s(cut);
}
