/**
 * Decodes what POST /v1/audio/speech returns, with reference decoders (WebAssembly builds of
 * mpg123, libopus + Ogg, libFLAC) for the compressed formats and by parsing for wav and pcm.
 */
import { MPEGDecoder } from "mpg123-decoder";
import { OggOpusDecoder } from "ogg-opus-decoder";
import { FLACDecoder } from "@wasm-audio-decoders/flac";

export interface Decoded {
  samples: Float32Array;
  sampleRate: number;
}

/** s16le → floats; `exact` integer samples are available as `ints`. */
export function decodePcm(bytes: Uint8Array): Decoded & { ints: Int16Array } {
  const ints = new Int16Array(bytes.byteLength / 2);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < ints.length; i++) ints[i] = v.getInt16(i * 2, true);
  return { samples: Float32Array.from(ints, (x) => x / 32767), sampleRate: 24_000, ints };
}

/** Checks the RIFF header (format 1, mono, 16-bit) and returns the samples after it. */
export function decodeWav(bytes: Uint8Array): Decoded {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => new TextDecoder().decode(bytes.subarray(at, at + 4));
  if (tag(0) !== "RIFF" || tag(8) !== "WAVE" || tag(12) !== "fmt " || tag(36) !== "data") throw new Error("not a WAV file");
  if (v.getUint16(20, true) !== 1 || v.getUint16(22, true) !== 1 || v.getUint16(34, true) !== 16) throw new Error("not mono s16 PCM");
  return { ...decodePcm(bytes.subarray(44)), sampleRate: v.getUint32(24, true) };
}

export async function decodeAudio(format: string, bytes: Uint8Array): Promise<Decoded> {
  if (format === "pcm") return decodePcm(bytes);
  if (format === "wav") return decodeWav(bytes);
  if (format === "mp3") {
    const d = new MPEGDecoder();
    await d.ready;
    const r = d.decode(bytes);
    d.free();
    if (r.errors.length) throw new Error(`mp3 decode errors: ${JSON.stringify(r.errors[0])}`);
    return { samples: r.channelData[0] ?? new Float32Array(0), sampleRate: r.sampleRate };
  }
  const d = format === "opus" ? new OggOpusDecoder() : new FLACDecoder();
  await d.ready;
  const r = await d.decodeFile(bytes);
  d.free();
  if (r.errors.length) throw new Error(`${format} decode errors: ${JSON.stringify(r.errors[0])}`);
  return { samples: r.channelData[0] ?? new Float32Array(0), sampleRate: r.sampleRate };
}
