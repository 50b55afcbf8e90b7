import { describe, expect, test } from "bun:test";
import { MPEGDecoder } from "mpg123-decoder";
import { OggOpusDecoder } from "ogg-opus-decoder";
import { FLACDecoder } from "@wasm-audio-decoders/flac";
import { createEncoder, SUPPORTED_FORMATS, type AudioFormat } from "./encoder";
import { concatBytes, floatToInt16 } from "./pcm";
import { oggCrc } from "./ogg";

const RATE = 24_000;

function tone(seconds: number, freq = 440): Float32Array {
  const x = new Float32Array(Math.round(seconds * RATE));
  for (let i = 0; i < x.length; i++) x[i] = 0.5 * Math.sin((2 * Math.PI * freq * i) / RATE);
  return x;
}

/** Encodes in several pieces, as the speech route does per sentence. */
async function encode(format: AudioFormat, pieces: Float32Array[]): Promise<Uint8Array> {
  const enc = await createEncoder(format, RATE);
  const parts = [enc.start(), ...pieces.map((p) => enc.encode(floatToInt16(p))), enc.finish()];
  enc.close();
  return concatBytes(parts);
}

async function decode(format: AudioFormat, bytes: Uint8Array): Promise<{ samples: Float32Array; rate: number }> {
  if (format === "pcm" || format === "wav") {
    const body = format === "wav" ? bytes.subarray(44) : bytes;
    const v = new DataView(body.buffer, body.byteOffset, body.byteLength);
    const out = new Float32Array(body.byteLength / 2);
    for (let i = 0; i < out.length; i++) out[i] = v.getInt16(i * 2, true) / 32767;
    return { samples: out, rate: RATE };
  }
  const d = format === "mp3" ? new MPEGDecoder() : format === "opus" ? new OggOpusDecoder() : new FLACDecoder();
  await d.ready;
  // decodeFile flushes, so the last (partial) frame is decoded too.
  const r = "decodeFile" in d ? await (d as FLACDecoder).decodeFile(bytes) : await d.decode(bytes);
  d.free();
  return { samples: r.channelData[0] ?? new Float32Array(0), rate: r.sampleRate };
}

describe("audio encoders", () => {
  for (const format of SUPPORTED_FORMATS) {
    test(`${format}: decodes back to the same duration and signal`, async () => {
      const pieces = [tone(0.37), tone(0.5, 220), tone(0.013)];
      const total = pieces.reduce((n, p) => n + p.length, 0);
      const bytes = await encode(format, pieces);
      const { samples, rate } = await decode(format, bytes);
      const seconds = samples.length / rate;
      // Lossy codecs pad to whole frames (mp3 adds encoder delay); lossless ones are exact.
      if (format === "mp3") expect(Math.abs(seconds - total / RATE)).toBeLessThan(0.12);
      else if (format === "opus") expect(Math.abs(seconds - total / RATE)).toBeLessThan(0.03);
      else expect(samples.length).toBe(total);
      const rms = Math.sqrt(samples.reduce((s, v) => s + v * v, 0) / samples.length);
      expect(rms).toBeGreaterThan(0.25);
      expect(rms).toBeLessThan(0.5);
    });
  }

  test("flac is lossless", async () => {
    const x = tone(0.3, 1234);
    x[5] = -1;
    x[6] = 1;
    const { samples } = await decode("flac", await encode("flac", [x]));
    const expected = floatToInt16(x);
    expect(samples.length).toBe(expected.length);
    // The decoder scales by 1/32767: every sample comes back exactly.
    const back = Int16Array.from(samples, (v) => Math.round(v * 32767));
    expect([...back]).toEqual([...expected]);
  });

  test("silence and empty input still make valid streams", async () => {
    for (const format of SUPPORTED_FORMATS) {
      const bytes = await encode(format, [new Float32Array(1000)]);
      const { samples } = await decode(format, bytes);
      expect({ format, loud: samples.filter((v) => Math.abs(v) >= 0.01).length }).toEqual({ format, loud: 0 });
      const empty = await encode(format, []);
      expect(empty.length).toBeGreaterThanOrEqual(0);
    }
  });

  test("wav header announces a streaming (unknown) length at 24 kHz mono s16", async () => {
    const bytes = await encode("wav", [tone(0.1)]);
    const v = new DataView(bytes.buffer, bytes.byteOffset);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe("RIFF");
    expect(v.getUint32(4, true)).toBe(0xffffffff);
    expect(v.getUint32(24, true)).toBe(RATE);
    expect(v.getUint16(22, true)).toBe(1);
    expect(v.getUint16(34, true)).toBe(16);
    expect(v.getUint32(40, true)).toBe(0xffffffff);
  });

  test("ogg pages carry valid CRCs and the last one is end-of-stream", async () => {
    const bytes = await encode("opus", [tone(1.3)]);
    let at = 0;
    let pages = 0;
    let lastFlags = 0;
    while (at < bytes.length) {
      expect(new TextDecoder().decode(bytes.subarray(at, at + 4))).toBe("OggS");
      const segs = bytes[at + 26]!;
      const body = bytes.subarray(at + 27, at + 27 + segs).reduce((n, s) => n + s, 0);
      const page = bytes.slice(at, at + 27 + segs + body);
      const crc = new DataView(page.buffer).getUint32(22, true);
      page.fill(0, 22, 26);
      expect(oggCrc(page)).toBe(crc);
      lastFlags = bytes[at + 5]!;
      at += 27 + segs + body;
      pages++;
    }
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(lastFlags & 4).toBe(4);
  });
});
