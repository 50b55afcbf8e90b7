import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { FLAC_BLOCK, FlacEncoder } from "./flac";

const RATE = 24_000;

function samples(n: number): Int16Array {
  const x = new Int16Array(n);
  for (let i = 0; i < n; i++) x[i] = Math.round(12_000 * Math.sin(i / 7) + ((i * 7919) % 97));
  return x;
}

/** STREAMINFO fields, read bit by bit from the file's first 42 bytes. */
function streamInfo(file: Uint8Array) {
  let bit = 0;
  const read = (n: number) => {
    let v = 0;
    for (let i = 0; i < n; i++, bit++) v = v * 2 + ((file[bit >> 3]! >> (7 - (bit & 7))) & 1);
    return v;
  };
  const magic = new TextDecoder().decode(file.subarray(0, 4));
  bit = 32;
  return {
    magic,
    last: read(1),
    type: read(7),
    length: read(24),
    minBlock: read(16),
    maxBlock: read(16),
    minFrame: read(24),
    maxFrame: read(24),
    rate: read(20),
    channels: read(3) + 1,
    bits: read(5) + 1,
    total: read(36),
    md5: Buffer.from(file.subarray(26, 42)).toString("hex"),
  };
}

/** Byte lengths of the frames after the header, found by their sync codes and frame numbers. */
function frameOffsets(file: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 42; i + 1 < file.length; i++) if (file[i] === 0xff && (file[i + 1]! & 0xfe) === 0xf8 && file[i + 4] === out.length) out.push(i);
  return out;
}

describe("FLAC STREAMINFO", () => {
  test("the file is sent whole, with the exact total samples, MD5 and frame sizes", () => {
    const pieces = [samples(5000), samples(3000), samples(1234)];
    const all = new Int16Array(9234);
    let at = 0;
    for (const p of pieces) all.set(p, (at += p.length) - p.length);
    const enc = new FlacEncoder(RATE);
    expect(enc.start().length).toBe(0);
    for (const p of pieces) expect(enc.encode(p).length).toBe(0);
    const file = enc.finish();
    const info = streamInfo(file);
    expect(info).toMatchObject({ magic: "fLaC", last: 1, type: 0, length: 34, minBlock: FLAC_BLOCK, maxBlock: FLAC_BLOCK, rate: RATE, channels: 1, bits: 16, total: 9234 });
    expect(info.md5).toBe(createHash("md5").update(new Uint8Array(all.buffer)).digest("hex"));
    const offsets = frameOffsets(file);
    expect(offsets.length).toBe(3); // 4096 + 4096 + 1042
    const sizes = offsets.map((o, i) => (offsets[i + 1] ?? file.length) - o);
    expect(info.minFrame).toBe(Math.min(...sizes));
    expect(info.maxFrame).toBe(Math.max(...sizes));
  });

  test("no audio: a valid empty file (zero samples, zero MD5)", () => {
    const enc = new FlacEncoder(RATE);
    const info = streamInfo(enc.finish());
    expect(info.total).toBe(0);
    expect(info.md5).toBe("0".repeat(32));
  });
});
